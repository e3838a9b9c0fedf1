"""`auditor diff`: the pure comparison, its renderers, and the command's files and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.core.results import read_run
from auditor.report.diff import AllowList, AllowListError, diff_runs, parse_allow_list, summary_line
from auditor.report.diff_render import render_diff_html, render_diff_markdown, render_diff_text
from tests.report.helpers import result, run_info, write_run

REPO = Path(__file__).resolve().parents[2]
OLD_SIG = "TypeError: unsupported operand type(s) for **: 'NoneType' and 'float'"
NEW_SIG = "KeyError: 'full_attention'"


@pytest.fixture
def runs(tmp_path):
    """BASE and NEW: one regression (gpt2), one fix (t5), one changed failure (whisper),
    one model type added (zamba), one removed (bloom), and a column only in NEW."""
    base = write_run(tmp_path / "base", [
        result("bert", "build"),
        result("gpt2", "build"),
        result("t5", "error", signature=OLD_SIG),
        result("whisper", "error", signature=OLD_SIG),
        result("bloom", "build"),
        result("bert", "build", check="decorate", policy="legacy"),
    ], started="2026-11-29T02:00:00+00:00")
    new = write_run(tmp_path / "new", [
        result("bert", "build"),
        result("gpt2", "error", signature=NEW_SIG, message=f"{NEW_SIG}\nwith <script>alert(1)</script>"),
        result("t5", "build"),
        result("whisper", "error", signature=NEW_SIG),
        result("zamba", "build"),
        result("bert", "build", check="decorate", policy="legacy"),
        result("bert", "build", check="pickle"),
    ], started="2026-11-30T02:00:00+00:00", transformers="5.25.0")
    return base, new


def test_diff_finds_each_kind_of_change(runs):
    base, new = runs
    diff = diff_runs(read_run(base), read_run(new))
    assert [(c.model_type, c.column, c.before, c.after) for c in diff.regressions] == [("gpt2", "build", "build", "error")]
    assert [(c.model_type, c.before, c.after) for c in diff.fixes] == [("t5", "error", "build")]
    assert [(c.model_type, c.before_signature, c.after_signature) for c in diff.changed] == [
        ("whisper", OLD_SIG, NEW_SIG)]
    assert diff.added_types == ("zamba",)
    assert diff.removed_types == ("bloom",)
    assert diff.added_columns == ("pickle",)
    assert diff.removed_columns == ()
    assert diff.unchanged == 2  # bert build and bert decorate/legacy
    assert diff.blocking == diff.regressions
    assert diff.new.environment == "py3.11 tf5.25.0 torch2.13.0+cpu"


def test_identical_runs_have_no_changes(runs):
    base, _ = runs
    diff = diff_runs(read_run(base), read_run(base))
    assert not (diff.regressions or diff.fixes or diff.changed or diff.added_types or diff.removed_types)
    assert diff.unchanged == 6


def test_a_cell_missing_on_one_side_is_listed_not_compared(tmp_path):
    base = read_run(write_run(tmp_path / "a", [result("bert", "build"), result("gpt2", "build", check="pickle"),
                                               result("bert", "build", check="pickle")]))
    new = read_run(write_run(tmp_path / "b", [result("bert", "build"), result("gpt2", "build", check="pickle")]))
    diff = diff_runs(base, new)
    assert [c.key for c in diff.removed_cells] == ["bert/pickle"]
    assert diff.regressions == ()


@pytest.mark.parametrize(("entry", "allowed"), [
    ("gpt2", True),
    ("gpt2/build", True),
    ("gpt2/decorate", False),
    ("gpt2/bui", False),  # a prefix covers whole segments only
    ("gpt", False),
    ("bert", False),
])
def test_allow_list_entries(entry, allowed):
    assert AllowList((entry,)).allows("gpt2", "build") is allowed


def test_allow_list_prefix_covers_policies():
    allow = parse_allow_list("llava/decorate  # known, see issue 7\n")
    assert allow.allows("llava", "decorate/legacy")
    assert allow.allows("llava", "decorate/fixed")
    assert not allow.allows("llava", "build")
    assert not AllowList(("llava/decorate/fixed",)).allows("llava", "decorate/fixed-no-config-skip")


def test_allow_list_parsing_skips_comments_and_blank_lines():
    text = "# known regressions\n\ngpt2\n  t5/decorate/legacy   # flaky\n"
    assert parse_allow_list(text).entries == ("gpt2", "t5/decorate/legacy")


@pytest.mark.parametrize("line", ["gpt2 build", "/build", "gpt2/"])
def test_allow_list_rejects_malformed_lines(line):
    with pytest.raises(AllowListError, match="allow.txt:2"):
        parse_allow_list(f"bert\n{line}\n", "allow.txt")


def test_renderers_show_every_section(runs):
    base, new = runs
    diff = diff_runs(read_run(base), read_run(new), AllowList(("gpt2", "nosuchmodel")))
    text = render_diff_text(diff)
    assert "1 regression (1 allowed), 1 fix, 1 changed failure" in text
    assert "gpt2" in text and "build -> error  [allowed]" in text
    assert "Model types added (1): zamba" in text and "Model types removed (1): bloom" in text
    assert "Columns only in new (1): pickle" in text
    assert "matched nothing (1): nosuchmodel" in text
    markdown = render_diff_markdown(diff)
    assert "## Regressions (1)" in markdown and "| gpt2 | build | build | error (allowed) |" in markdown
    assert "## Fixes (1)" in markdown and "## Changed failures (1)" in markdown
    html = render_diff_html(diff)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def _diff(*args: str) -> int:
    return main(["diff", *args])


def test_cli_exit_1_on_regression_and_writes_files_next_to_new(runs, capsys):
    base, new = runs
    assert _diff(str(base), str(new)) == 1
    out = capsys.readouterr().out
    assert "Regressions (1):" in out and "Fixes (1):" in out
    assert (new / "diff.md").is_file() and (new / "diff.html").is_file()
    assert "gpt2" in (new / "diff.md").read_text()


def test_cli_exit_0_when_the_allow_list_covers_the_regression(runs, tmp_path):
    base, new = runs
    allow = tmp_path / "allow.txt"
    allow.write_text("# accepted while transformers 5.25 settles\ngpt2/build\n")
    out = tmp_path / "out"
    assert _diff(str(base / "results.jsonl"), str(new / "results.jsonl"), "--allow", str(allow), "-o", str(out)) == 0
    assert (out / "diff.html").is_file()
    allow.write_text("gpt2/decorate\n")
    assert _diff(str(base), str(new), "--allow", str(allow), "-o", str(out)) == 1


def test_cli_exit_0_without_regressions(runs):
    base, _ = runs
    assert _diff(str(base), str(base)) == 0


def _bad_inputs(tmp_path: Path) -> dict[str, Path]:
    malformed = tmp_path / "malformed.jsonl"
    header = json.dumps(run_info().to_json())
    malformed.write_text(f'{header}\n{{not json\n{{"kind": "result"}}\n')
    future = tmp_path / "future.jsonl"
    future.write_text(json.dumps({"kind": "header", "format_version": 99, "run": {}}) + "\n")
    return {"missing": tmp_path / "nope", "malformed": malformed, "future": future}


@pytest.mark.parametrize(("which", "message"), [
    ("missing", "cannot read"),
    ("malformed", "not JSON"),
    ("future", "format version 99"),
])
def test_cli_exit_2_on_bad_input(runs, tmp_path, capsys, which, message):
    base, _ = runs
    bad = _bad_inputs(tmp_path)[which]
    assert _diff(str(base), str(bad)) == 2
    err = capsys.readouterr().err
    assert err.startswith("auditor: error: ") and message in err


def test_cli_exit_2_on_header_without_run_fields(runs, tmp_path, capsys):
    base, _ = runs
    bad = tmp_path / "bad-header.jsonl"
    bad.write_text('{"kind": "header", "format_version": 1, "run": {}}\n')
    assert _diff(str(base), str(bad)) == 2


def test_cli_exit_2_on_bad_allow_list(runs, tmp_path, capsys):
    base, new = runs
    assert _diff(str(base), str(new), "--allow", str(tmp_path / "absent.txt")) == 2
    assert "cannot read allow list" in capsys.readouterr().err
    bad = tmp_path / "allow.txt"
    bad.write_text("gpt2 build\n")
    assert _diff(str(base), str(new), "--allow", str(bad)) == 2
    assert "allow.txt:1" in capsys.readouterr().err


def test_python_dash_m_auditor_diff(runs):
    base, new = runs
    proc = subprocess.run([sys.executable, "-m", "auditor", "diff", str(base), str(new)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "Regressions (1):" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "auditor", "diff", str(base), str(new / "missing.jsonl")],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "auditor: error: cannot read" in proc.stderr


def test_an_engine_upgrade_lists_the_verdicts_that_change_with_why(tmp_path):
    """Crafted serves rows of two vLLM releases (real ones: the closing notes' 0.33.0 and 0.34.0
    runs): a type that moves from the Transformers backend to a native class passes on both
    sides (no cell change) and is a verdict change; one that stops constructing is a regression;
    one that was undecided and is served now, a change of its own."""
    from dataclasses import replace

    from auditor import engines
    from auditor.core.results import Result
    from auditor.core.status import Status

    def served(model_type, status, message, **extras):
        return Result(model_type, "serves", Status(status), component="vllm", message=message, extras=extras,
                      fault="" if status == "build" else ("environment" if status == "undecided" else "engine"))

    backend = "servable: Transformers backend (TransformersForCausalLM)"
    base_rows = [served("gemma", "build", backend, impl="Transformers backend"),
                 served("llama", "build", "servable: native LlamaForCausalLM", impl="native"),
                 served("phi", "build", backend, impl="Transformers backend"),
                 served("bloom", "undecided", "copy out of meta tensor")]
    new_rows = [served("gemma", "build", "servable: native GemmaForCausalLM", impl="native"),
                served("llama", "build", "servable: native LlamaForCausalLM", impl="native"),
                served("phi", "unsupported", "ValueError: phi is not supported"),
                served("bloom", "build", "servable: native BloomForCausalLM", impl="native")]
    record = engines.get("vllm").record()
    base = read_run(write_run(tmp_path / "a", base_rows, checks=("serves",), engines=(replace(record, version="0.33.0"),)))
    new = read_run(write_run(tmp_path / "b", new_rows, checks=("serves",), engines=(replace(record, version="0.34.0"),)))
    diff = diff_runs(base, new)
    vllm = diff.changes.engine("vllm")
    assert vllm.line == "vLLM 0.34.0: 1 lost, 1 moved, 1 undecided of 4"  # llama's verdict is the same
    (phi,), (gemma,), (bloom,) = vllm.lost, vllm.moved, vllm.undecided
    assert (phi.model_type, gemma.model_type, bloom.model_type) == ("phi", "gemma", "bloom")
    assert gemma.why == "now served native GemmaForCausalLM (was Transformers backend (TransformersForCausalLM))"
    assert phi.why.startswith("now stops at serves/vllm") and phi.fault == "engine"
    assert bloom.why == "now served (native BloomForCausalLM); was undecided at serves/vllm"
    assert diff.lost() == (phi,) and diff.failing() and diff.failing(("vllm",)) and not diff.failing(("sglang",))
    assert "gemma" not in {c.model_type for c in (*diff.regressions, *diff.fixes, *diff.changed)}
    markdown = render_diff_markdown(diff)
    assert "- **vLLM 0.34.0: 1 lost, 1 moved, 1 undecided of 4**" in markdown
    assert "| vLLM 0.34.0 | phi | lost | servable: Transformers backend (TransformersForCausalLM) |" in markdown
    assert "| vLLM 0.34.0 | gemma | moved |" in markdown
    html = render_diff_html(diff)
    assert 'id="engines"' in html and 'data-engine="vllm"' in html
    assert "1 type lost by an engine" in html  # the badge says why the diff exits 1


# 4.57.6 -> 5.25.0 as upgrade-check swept it (BENCHMARKS.md): the rows the build and weights checks
# write, their messages as the checks word them and their signatures as auditor.core.messages makes them.
SAVED_UNDER = "every key loaded, outputs equal to those saved under transformers 4.57.6"
TOLERANCE = "atol 0.0001, rtol 0.0001 (float32)"
DOGE = ("every key loaded, but the outputs differ from those saved under transformers 4.57.6: "
        f"max abs diff 0.578, max rel diff 3.27e+04 ({TOLERANCE})")


def _weights(model_type: str, status: str, message: str, **extras):
    from auditor.core.messages import signature_of
    from auditor.core.results import Result
    from auditor.core.status import Status

    failing = not Status(status).ok
    return Result(model_type, "weights", Status(status), message=message, seconds=0.02, extras=extras,
                  signature=signature_of(message) if failing else "", fault="model" if failing else "")


def _same(model_type: str, model_class: str):
    return _weights(model_type, "same", f"{model_class}: {SAVED_UNDER} (max abs diff 0; {TOLERANCE})")


def _unknown_type(model_type: str):
    """What this transformers raises for a type it does not have, classified as the build check does."""
    import transformers

    from auditor.core.classifier import Phase, classify

    try:
        transformers.AutoConfig.for_model(model_type)
    except ValueError as exc:
        return classify(exc, Phase.CONFIG)
    raise AssertionError(f"{model_type} is a model type of this transformers")


@pytest.fixture
def upgrade(tmp_path):
    """BASE (4.57.6) and NEW (5.25.0): doge's outputs differ now; mega is a type 5.25.0 removed
    (its build cannot make its config, its weights row says type-removed); olmo3 differs on both
    sides, by other numbers (one signature: no change)."""
    from auditor.core.results import Result

    olmo3 = "every key loaded, but the outputs differ from those saved under transformers 4.57.6: " \
            "max abs diff {}, max rel diff {} ({})"
    gone = _unknown_type("mega")
    base = write_run(tmp_path / "base", [
        result("doge", "build"), _same("doge", "DogeForCausalLM"),
        result("mega", "build"), _same("mega", "MegaForCausalLM"),
        result("olmo3", "build"), _weights("olmo3", "different-outputs", olmo3.format(0.089, 12.5, TOLERANCE)),
    ], checks=("build", "weights"), transformers="4.57.6")
    new = write_run(tmp_path / "new", [
        result("doge", "build"), _weights("doge", "different-outputs", DOGE, max_abs_diff=0.578, max_rel_diff=32700.0),
        Result.failed("mega", "build", gone),
        _weights("mega", "type-removed", f"mega is not a model type here: {gone.message}"),
        result("olmo3", "build"), _weights("olmo3", "different-outputs", olmo3.format(0.091, 13.1, TOLERANCE)),
    ], checks=("build", "weights"), transformers="5.25.0")
    return base, new


def test_a_finding_shows_its_own_message_whole_and_is_grouped_by_its_signature(upgrade, capsys):
    base, new = upgrade
    diff = diff_runs(read_run(base), read_run(new))
    doge = next(c for c in diff.regressions if c.model_type == "doge")
    assert (doge.column, doge.after) == ("weights", "different-outputs")
    assert "max abs diff N" in doge.after_signature  # what the diff groups by
    assert doge.explanation == (DOGE,)  # what it shows
    assert diff.changed == ()  # olmo3: other numbers, one signature
    markdown = render_diff_markdown(diff)
    assert f"| doge | weights | same | different-outputs | {DOGE} |" in markdown
    assert "max abs diff N" not in markdown
    assert _diff(str(base), str(new), "-o", str(base.parent / "out")) == 1  # the terminal, as upgrade-check prints it
    out = capsys.readouterr().out
    assert f"same -> different-outputs  {DOGE}\n" in out  # the Regressions section
    assert f"  new: doge weights: same -> different-outputs: {DOGE} (fault: model)" in out  # the changes' lines
    assert "max abs diff N" not in out
    assert f"{DOGE} |" in (base.parent / "out" / "diff.md").read_text()


def test_a_type_the_new_release_removed_counts_once_as_removed(upgrade, capsys):
    base, new = upgrade
    diff = diff_runs(read_run(base), read_run(new))
    assert [(c.model_type, c.column) for c in diff.regressions] == [("doge", "weights")]  # not mega's build and weights
    assert diff.removed_types == ("mega",) and diff.added_types == ()
    assert [c.model_type for c in diff.changes.new_findings] == ["doge"]
    assert diff.changes.removed_types == ("mega",)
    assert summary_line(diff).startswith("1 regression, 0 fixes, 0 changed failures, 0 model types added, 1 removed")
    markdown = render_diff_markdown(diff)
    assert "## Regressions (1)" in markdown and "## Model types removed (1)\n\nmega" in markdown
    assert "| mega |" not in markdown
    assert _diff(str(base), str(new), "-o", str(base.parent / "out")) == 1  # doge's finding, not mega
    out = capsys.readouterr().out
    assert "1 new finding, 0 fixed, 0 flaky; 0 new types (0 with findings), 1 removed" in out
    assert "Regressions (1):" in out and "Model types removed (1): mega" in out
    assert "  mega " not in out


def test_an_engine_does_not_lose_a_type_the_release_removed(tmp_path):
    """Serves rows of one vLLM under 4.57.6 and 5.25.0: mega served, then unsupported because 5.25.0
    has no such type (its weights row says so): removed, for the engine too, not lost."""
    from auditor import engines
    from auditor.core.results import Result
    from auditor.core.status import Status

    gone = _unknown_type("mega")
    record = engines.get("vllm").record()
    base = read_run(write_run(tmp_path / "a", [
        Result("mega", "serves", Status.BUILD, component="vllm", message="servable: Transformers backend",
               extras={"impl": "Transformers backend"}),
        _same("mega", "MegaForCausalLM")], checks=("serves", "weights"), engines=(record,), transformers="4.57.6"))
    new = read_run(write_run(tmp_path / "b", [
        Result("mega", "serves", Status.UNSUPPORTED, component="vllm", message=gone.message, signature=gone.signature,
               fault="model"),
        _weights("mega", "type-removed", f"mega is not a model type here: {gone.message}")],
        checks=("serves", "weights"), engines=(record,), transformers="5.25.0"))
    diff = diff_runs(base, new)
    vllm = diff.changes.engine("vllm")
    assert vllm.lost == () and vllm.removed_types == ("mega",)
    assert diff.removed_types == ("mega",) and diff.regressions == () and not diff.failing()


def test_summary_groups_a_cause_by_signature_and_shows_one_cells_numbers(upgrade):
    """summary.md's most common findings: olmo3's two rows (other numbers, one signature) are one
    cause, shown with the message of one of them, its numbers whole."""
    from auditor.report.markdown import render_summary

    base, new = upgrade
    text = render_summary([read_run(base), read_run(new)])
    causes = text.split("most common findings")[1]
    assert "max abs diff 0.089" in causes or "max abs diff 0.091" in causes, causes
    rows = [line for line in causes.splitlines() if line.startswith("| 2 |")]
    assert len(rows) == 1 and "different-outputs" in rows[0] and "olmo3" in rows[0], rows  # one cause, two cells
    assert "max abs diff N" not in causes
