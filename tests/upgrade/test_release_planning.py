"""Planning `bisect` and `versions` on recorded data: the index's release list, ranges and
specifiers, the bisection's probes and answers, the git protocol, and the min/max table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from auditor.core.outcome import judge
from auditor.core.results import Result
from auditor.core.status import Status
from auditor.environments.releases import (
    ReleaseError,
    final_releases,
    parse_index_versions,
    releases_between,
    resolve_releases,
)
from auditor.environments.steps import parse_transformers
from auditor.environments.venvs import RELEASE_SESSION, release_steps
from auditor.report.ranges import pass_ranges, ranges_csv, ranges_html
from auditor.sweeping.sides import SideSweep, side_sweep
from auditor.upgrade.bisect_run import only_type
from auditor.upgrade.bisection import (
    GIT_BAD,
    GIT_GOOD,
    GIT_SKIP,
    BisectError,
    BisectTarget,
    Entry,
    State,
    bounds,
    cell_state,
    changed_columns,
    check_ends,
    first_bad_commit,
    next_probe,
    parse_cell,
    step_verdict,
    sweep_selection,
)

INDEX = (Path(__file__).resolve().parents[1] / "fixtures" / "upgrade" / "pip-index-versions.txt").read_text()
RELEASES = parse_index_versions(INDEX)
POLICIES = {"legacy", "fixed", "fixed-no-config-skip", "vllm"}.__contains__


def test_the_index_list_is_final_releases_oldest_first():
    assert RELEASES[-3:] == ["5.22.2", "5.23.0", "5.24.0"]
    assert RELEASES[0] == "0.1" and len(RELEASES) == len(set(RELEASES))
    assert final_releases(["5.1.0", "5.2.0rc1", "5.0.0", "5.1.0.dev0", "junk", "5.10.0"]) == ["5.0.0", "5.1.0", "5.10.0"]
    with pytest.raises(ReleaseError, match="listed no versions"):
        parse_index_versions("ERROR: No matching distribution found for transformers")


def test_between_includes_both_ends_and_every_patch_release():
    assert releases_between("5.13.0", "5.18.0", RELEASES) == [
        "5.13.0", "5.13.1", "5.14.0", "5.14.1", "5.15.0", "5.15.1", "5.16.0", "5.16.1", "5.17.0", "5.18.0"]
    assert releases_between("5.18", "5.20", RELEASES) == ["5.18.0", "5.19.0", "5.20.0"]


@pytest.mark.parametrize(("good", "bad", "message"), [
    ("5.13.0", "5.99.0", "5.99.0 is not a release on the package index; nearest: 5.24.0"),
    ("5.10.3", "5.18.0", "5.10.3 is not a release on the package index; nearest: 5.10.2, 5.10.4"),
    ("5.18.0", "5.13.0", "must be an older release than"),
    ("5.18.0", "5.18.0", "must be an older release than"),
    ("latest", "5.18.0", "'latest' is not a version"),
])
def test_bad_ends_are_refused(good, bad, message):
    with pytest.raises(ReleaseError, match=message.replace(".", r"\.").replace("(", r"\(")):
        releases_between(good, bad, RELEASES)


def test_a_list_or_a_specifier_resolves_against_the_index():
    assert resolve_releases("5.24.0, 5.20.0,5.22.0", RELEASES) == ["5.20.0", "5.22.0", "5.24.0"]
    assert resolve_releases(">=5.20,<5.23", RELEASES) == ["5.20.0", "5.20.1", "5.20.2", "5.21.0", "5.21.1",
                                                           "5.22.0", "5.22.1", "5.22.2"]
    assert resolve_releases("~=5.22.0", RELEASES) == ["5.22.0", "5.22.1", "5.22.2"]
    for spec, message in ((">=9", "no transformers release"), ("5.20.0,5.20.9", "5.20.9 is not a release"),
                          (">=5.x", "neither a list"), ("", "no releases given")):
        with pytest.raises(ReleaseError, match=message):
            resolve_releases(spec, RELEASES)


def test_a_column_names_the_check_and_policy_it_needs():
    assert sweep_selection(parse_cell("llama", "decorate/decoder/legacy"), POLICIES) == ("decorate", "legacy")
    assert sweep_selection(parse_cell("bert", "pickle/far-build:decoder/fixed-no-config-skip"), POLICIES) == \
        ("pickle", "fixed-no-config-skip")
    assert sweep_selection(parse_cell("gpt2", "build"), POLICIES) == ("build", None)
    assert sweep_selection(parse_cell("gpt2", "decorate/legacy"), POLICIES) == ("decorate", "legacy")
    assert sweep_selection(parse_cell("gpt2", "tiny/decoder"), POLICIES) == ("tiny", None)
    assert sweep_selection(parse_cell("gpt2", None), POLICIES) == ("", None)
    with pytest.raises(BisectError):
        parse_cell(" ", "build")


def test_only_type_selects_one_type_and_an_empty_run_where_the_release_lacks_it():
    import argparse

    from auditor.models import cases
    from auditor.sweeping.options import add_arguments, make_request, values_of

    words = only_type("granite_swa").flags()
    assert words == ["--models", "granite_swa", "--allow-absent"]
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    request = make_request(**values_of(parser.parse_args(words)))
    assert request.allow_absent
    older = [cases.ModelCase(name) for name in ("granite", "llama")]  # a release before granite_swa
    absent: list[str] = []
    assert cases.select(older, request.models, absent=absent) == [] and absent == ["granite_swa"]
    newer = [*older, cases.ModelCase("granite_swa")]
    assert [c.model_type for c in cases.select(newer, request.models, absent=[])] == ["granite_swa"]


def test_release_steps_use_upgrade_checks_session_in_their_own_envdir():
    install, sweep = release_steps(parse_transformers("5.15.0", Path("/")), outdir=Path("/out/5.15.0"),
                                   envdir=Path("/src/.nox/bisect"), noxfile=Path("/src/noxfile.py"),
                                   nox=("nox",), sweep=side_sweep(checks="build"), label="transformers 5.15.0")
    assert install.argv == ("nox", "--noxfile", "/src/noxfile.py", "--envdir", "/src/.nox/bisect",
                            "--session", RELEASE_SESSION, "--install-only")
    assert sweep.argv[-7:] == ("--output", "/out/5.15.0", "--label", "transformers 5.15.0", "--overwrite",
                               "--checks", "build")
    assert install.env == sweep.env == {"AUDITOR_TRANSFORMERS": "transformers==5.15.0"}
    with pytest.raises(ValueError):
        release_steps(parse_transformers("5.15.0", Path("/")), outdir=Path("out"), envdir=Path("/e"),
                      noxfile=Path("/n"), nox=("nox",), sweep=SideSweep(), label="")


def row(model, status, check="decorate", component="decoder", policy="legacy", message="", rerun=None):
    """A cell of one row, judged by the cell rule (`rerun`: the status its one rerun had)."""
    first = Result(model_type=model, check=check, status=Status(status), component=component, policy=policy,
                   message=message)
    rows = [first] if rerun is None else [first, replace(first, status=Status(rerun), extras={"rerun": 1})]
    return judge(rows)


def test_a_cells_state_is_its_columns_statuses():
    cells = {(v.row.model_type, v.row.column): v for v in (row("llama", "build"),
                                                           row("llama", "refused", policy="fixed"), row("gpt2", "error"))}
    one = cell_state(cells, BisectTarget("llama", "decorate/decoder/legacy"))
    assert one.statuses() == {"decorate/decoder/legacy": "build"}
    whole = cell_state(cells, BisectTarget("llama"))
    assert whole.statuses() == {"decorate/decoder/legacy": "build", "decorate/decoder/fixed": "refused"}
    assert cell_state(cells, BisectTarget("granite_swa")).absent
    assert changed_columns(one, whole) == ["decorate/decoder/fixed"]
    assert State().describe() == "absent (no such model type)"


def state(status: str | None) -> State:
    return State() if status is None else State((Entry("decorate/decoder/legacy", status, "msg"),))


# States as the real bisect of granite_swa between 5.13.0 and 5.18.0 recorded them: absent until
# the release that added the type (BENCHMARKS.md, "bisect").
SPAN = releases_between("5.13.0", "5.18.0", RELEASES)
ADDED = {r: state("build" if r >= "5.15.0" else None) for r in SPAN}


def bisect(truth, skip=()):
    states = {SPAN[0]: truth[SPAN[0]], SPAN[-1]: truth[SPAN[-1]]}
    probes = []
    while (release := next_probe(SPAN, states)) is not None:
        probes.append(release)
        states[release] = None if release in skip else truth[release]
    return bounds(SPAN, states), probes


def test_the_bisection_finds_the_release_in_log2_steps():
    outcome, probes = bisect(ADDED)
    assert outcome.found and outcome.first_bad == "5.15.0" and outcome.last_good == "5.14.1"
    assert len(probes) <= 4 and probes[0] in ("5.15.0", "5.15.1")  # the middle of 10 releases


def test_every_change_point_is_found():
    for index in range(1, len(SPAN)):
        truth = {r: state("build" if i < index else "refused") for i, r in enumerate(SPAN)}
        outcome, probes = bisect(truth)
        assert outcome.first_bad == SPAN[index] and outcome.found
        assert len(probes) <= 4  # ceil(log2(9)): 8 releases between the ends


def test_a_release_that_cannot_be_measured_is_skipped():
    outcome, probes = bisect(ADDED, skip={"5.15.0"})
    assert not outcome.found and outcome.candidates == ("5.15.0", "5.15.1")
    assert "5.15.0" in probes and "5.15.1" in probes


def test_the_same_cell_at_both_ends_is_refused():
    with pytest.raises(BisectError, match="does not differ between 5.13.0 and 5.18.0 .absent at both"):
        check_ends(State(), State(), BisectTarget("nope", "build"), "5.13.0", "5.18.0")
    with pytest.raises(BisectError, match="build"):
        check_ends(state("build"), state("build"), BisectTarget("llama", "decorate/decoder/legacy"), "a", "b")
    check_ends(state("build"), state("refused"), BisectTarget("llama"), "a", "b")


def test_a_step_speaks_git_bisect_runs_protocol():
    assert step_verdict(state("build"), state("build")) == GIT_GOOD
    assert step_verdict(state("build"), state("refused")) == GIT_BAD
    assert step_verdict(state(None), state("build")) == GIT_BAD
    assert step_verdict(state("build"), None) == GIT_SKIP
    sha = "4f0e2c1d9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e"
    assert first_bad_commit(f"Bisecting: 0 revisions left\n{sha} is the first bad commit\ncommit {sha}\n") == sha
    assert first_bad_commit("There are only 'skip'ped commits left to test.") is None


def test_pass_ranges_from_three_releases():
    by_release = {
        "5.20.0": {("llama", "build"): row("llama", "build", "build", "", ""),
                   ("bert", "build"): row("bert", "error", "build", "", "")},
        "5.22.0": {("llama", "build"): row("llama", "error", "build", "", ""),
                   ("bert", "build"): row("bert", "error", "build", "", ""),
                   ("gte", "build"): row("gte", "build", "build", "", "")},
        "5.24.0": {("llama", "build"): row("llama", "build", "build", "", ""),
                   ("bert", "build"): row("bert", "build", "build", "", ""),
                   ("gte", "build"): row("gte", "build", "build", "", "")},
    }
    ranges = {r.model_type: r for r in pass_ranges(by_release)}
    assert (ranges["llama"].lowest, ranges["llama"].highest, ranges["llama"].not_passing) == \
        ("5.20.0", "5.24.0", (("5.22.0", "error"),))
    assert (ranges["bert"].lowest, ranges["bert"].highest, ranges["bert"].not_passing) == ("5.24.0", "5.24.0", ())
    assert ranges["gte"].absent_in == ("5.20.0",) and ranges["gte"].lowest == "5.22.0"
    text = ranges_csv(list(ranges.values()))
    assert text.splitlines()[0] == "model_type,column,lowest_pass,highest_pass,not_passing_within,absent_in,releases"
    assert "llama,build,5.20.0,5.24.0,5.22.0:error,,5.20.0 5.22.0 5.24.0" in text
    page = ranges_html(list(ranges.values()), list(by_release))
    assert "5.22.0 (error)" in page and "Releases swept: 5.20.0, 5.22.0, 5.24.0" in page


def test_a_flaky_cell_is_neither_good_nor_bad_for_bisect_nor_a_failure_in_a_range():
    flaky = row("llama", "timeout", "build", "", "", rerun="build")
    state = cell_state({("llama", "build"): flaky}, BisectTarget("llama", "build"))
    assert state.statuses() == {"build": "flaky"} and state.flaky
    good = cell_state({("llama", "build"): row("llama", "build", "build", "", "")}, BisectTarget("llama", "build"))
    assert step_verdict(good, state) == GIT_SKIP
    confirmed = cell_state({("llama", "build"): row("llama", "timeout", "build", "", "", rerun="timeout")},
                           BisectTarget("llama", "build"))
    assert step_verdict(good, confirmed) == GIT_BAD
    by_release = {"5.20.0": {("llama", "build"): row("llama", "build", "build", "", "")},
                  "5.22.0": {("llama", "build"): flaky},
                  "5.24.0": {("llama", "build"): row("llama", "build", "build", "", "")}}
    (llama,) = pass_ranges(by_release)
    assert (llama.lowest, llama.highest, llama.not_passing) == ("5.20.0", "5.24.0", ())
