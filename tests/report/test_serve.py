"""One verdict per model type and engine (auditor.report.serve), on one real sweep shared by the
module: llama and gpt2, which vLLM's Transformers backend serves, and t5, which it stops at its
decorator (vLLM decorates the decoder first, base.py:174). The verdict lines head the CLI's end
summary, summary.md and report.html, and their counts are those of the backend rows, judged by
the engine's own stopping gates."""

from __future__ import annotations

import csv
import dataclasses
import io

import pytest

from auditor import engines
from auditor.core.results import read_run
from auditor.engines.interface import pick_release
from auditor.report.causes import cause_of
from auditor.report.serve import Compiles, Serves, headlines, unreachable, verdicts, where_stopped
from tests.conftest import read_rows, run_auditor
from tests.report.helpers import result, write_run

TYPES = ("llama", "gpt2", "t5")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("serve") / "run"
    proc = run_auditor("sweep", "--models", ",".join(TYPES), "--checks", "backend", "--jobs", "2",
                       "--output", str(outdir))
    assert proc.returncode == 0, proc.stderr
    return outdir, proc.stderr


def _served_by_rows(outdir) -> dict[str, set[str]]:
    """Engine -> the types no stopping gate's emulated row refused, read from the rows directly
    with the engine's own data (not the header the report reads)."""
    _, rows = read_rows(outdir)
    found = {}
    for engine in engines.all():
        stopped = {row["model_type"] for row in rows if row["check"] == "backend" and not row["policy"]
                   and row["component"] in {engine.component(g) for g in engine.stopping}
                   and row["status"] == "unsupported"}
        found[engine.name] = set(TYPES) - stopped
    return found


def test_the_header_records_each_engine_with_its_versions_and_rule(sweep):
    outdir, _ = sweep
    info = read_run(outdir).info
    assert [e.name for e in info.engines] == list(engines.names())
    for recorded, engine in zip(info.engines, engines.all(), strict=True):
        assert recorded.follows == engine.follows and recorded.version == engine.version
        # Recorded as their rows name them (`sglang/registry`: the column `backend/sglang/registry`).
        assert set(recorded.stopping) == {engine.component(g) for g in engine.stopping}
        assert recorded.gates == tuple(engine.component(g) for g in engine.gate_names)


def test_counts_match_the_backend_rows(sweep):
    outdir, _ = sweep
    served = _served_by_rows(outdir)
    assert served["vllm"] == {"llama", "gpt2"}  # the sweep has one type vLLM stops, two it serves
    (headline,) = headlines(verdicts([read_run(outdir)]))
    for tally in headline.tallies:
        assert set(tally.served) == served[tally.engine.name]
        assert tally.total == len(TYPES)


def test_serve_csv_says_servable_or_where_it_stops_with_the_engines_message(sweep):
    outdir, _ = sweep
    table = {row["model_type"]: row for row in csv.DictReader(io.StringIO((outdir / "serve.csv").read_text()))}
    _, rows = read_rows(outdir)
    t5 = next(r for r in rows if r["model_type"] == "t5" and r["component"] == "decorate" and not r["policy"])
    assert table["llama"]["serve/vllm"] == "servable"
    assert table["t5"]["serve/vllm"] == f"stops at backend/decorate: {t5['message']}"
    # the same in fields, for scripts
    assert (table["llama"]["serve/vllm/verdict"], table["llama"]["serve/vllm/gate"]) == ("servable", "")
    stop = {field: table["t5"][f"serve/vllm/{field}"] for field in ("verdict", "gate", "signature", "message")}
    assert stop == {"verdict": "stops", "gate": "backend/decorate", "signature": cause_of(t5["message"]),
                    "message": t5["message"]}
    assert table["t5"]["serve/vllm/fault"] == t5.get("fault", "")


def test_the_verdict_line_heads_the_end_summary(sweep):
    outdir, stderr = sweep
    (headline,) = headlines(verdicts([read_run(outdir)]))
    assert headline.text.startswith(f"vLLM {engines.get('vllm').follows} (Transformers backend, emulated) "
                                    f"would serve 2 of {len(TYPES)} model types")
    lines = stderr.splitlines()
    done = next(i for i, line in enumerate(lines) if line.startswith("Done:"))
    at = lines.index(headline.text)
    # right before the rest of the end summary; only the since-section (what changed, or why
    # there is nothing to compare with) lies between
    assert at < done and all(line.startswith(("Since", "  ")) for line in lines[at + 1:done]), lines[at:done + 1]
    assert "serve.csv" in stderr


def test_summary_md_opens_with_the_verdict_and_where_each_engine_stops_types(sweep):
    outdir, _ = sweep
    text = (outdir / "summary.md").read_text()
    lines = text.splitlines()
    assert lines[0].startswith("### auditor:")
    follows = engines.get("vllm").follows
    assert lines[2].startswith(f"**vLLM {follows} (Transformers backend, emulated) would serve 2 of 3 model types")
    assert lines[4] == f"| vLLM {follows} (emulated) stops 1 model type: at | types | most common causes |"
    assert lines[6].startswith("| backend/decorate | 1 | ValueError: ") and lines[6].endswith(" (1: t5) |")
    sglang = next(i for i, line in enumerate(lines) if line.startswith("| SGLang "))
    table = lines[sglang + 2:lines.index("", sglang)]
    gates = [line.split(" | ")[0][2:] for line in table]
    order = [f"backend/{gate}" for gate in engines.get("sglang").record().gates]
    assert gates == sorted(gates, key=order.index)  # gate by gate, in the engine's order
    assert "&lt;" not in text and "&#" not in text and "&amp;" not in text  # backslash escapes, no entities
    assert f"engines: {engines.get('vllm').record().text}" in "\n".join(lines)


def test_the_verdict_line_heads_report_html(sweep):
    outdir, _ = sweep
    page = (outdir / "report.html").read_text()
    line = page.index("would serve 2 of 3 model types")
    assert line < page.index('<section id="environments">') < page.index('<section id="matrix-section">')
    head = page[line:page.index('<section id="environments">')]
    assert '<table class="plain where-stop" data-engine="vllm">' in head and '<tr data-gate="backend/decorate">' in head
    assert "1: t5" in head
    versions = "; ".join(engine.record().text for engine in engines.all())  # every engine, in order
    assert f"<td>{versions}</td>" in page  # the environments table


def test_the_emulation_follows_the_installed_releases_record_or_the_newest():
    """The rule, on an engine whose package is installed here (torch stands for the engine's
    package: vLLM is not installed in this venv): the record of the installed release where there
    is one (a local build's `+cpu` label aside), else the newest, said in the run's note."""
    vllm = engines.get("vllm")
    torch_release = vllm.release.__class__  # the records' type
    installed = dataclasses.replace(vllm, package="torch").version
    older = dataclasses.replace(vllm.releases[0], version="0.0.1")
    mine = dataclasses.replace(vllm.releases[-1], version=installed.split("+")[0])
    newest = dataclasses.replace(vllm.releases[-1], version="999.0")
    stand_in = dataclasses.replace(vllm, package="torch", releases=(older, mine, newest))
    assert isinstance(mine, torch_release) and stand_in.follows == mine.version and stand_in.release_note() == ""
    unknown = dataclasses.replace(vllm, package="torch", releases=(older, newest))
    assert unknown.follows == "999.0"
    note = unknown.release_note()
    assert f"vLLM {installed} is installed" in note and "follows 999.0" in note and "auditor agree" in note
    assert pick_release((older, mine), f"{mine.version}+cpu") is mine
    # Not installed: the newest record, whatever their order.
    assert pick_release((newest, older), None) is newest
    assert vllm.follows == (vllm.version.split("+")[0] if vllm.installed else vllm.releases[-1].version)


def test_own_code_rows_of_another_release_are_not_refused(monkeypatch):
    """`--policies vllm` with a vLLM installed that the emulation has no record of: the sweep
    goes on (its own-code rows are that release's), and says which release each side answers for."""
    from auditor.sweeping import validate

    vllm = engines.get("vllm")
    other = dataclasses.replace(vllm, package="torch", releases=(dataclasses.replace(vllm.releases[-1],
                                                                                     version="0.0.1"),))
    monkeypatch.setattr(engines, "by_policy", lambda name: other if name == "vllm" else None)
    assert validate._validated_policies(["legacy", "vllm"]) == ("legacy", "vllm")
    assert "follows 0.0.1" in other.release_note()


def test_compile_verdicts_read_the_engines_compile_rows(tmp_path):
    """Crafted rows (a compile sweep is minutes here): a servable type whose compile row passed
    compiles; one whose row timed out is undecided, not a model's failure; so is a type whose
    stopping gate timed out."""
    rows = [result(t, "build", check="backend", component=g) for t in ("llama", "bert") for g in ("registry", "build")]
    rows += [result("opt", "timeout", check="backend", component="registry"),  # the machine's failure
             result("llama", "compiled", check="compile", component="decoder", policy="fixed"),
             result("bert", "timeout", check="compile", component="decoder", policy="fixed")]
    run = read_run(write_run(tmp_path / "run", rows, checks=("backend", "compile"),
                             experiment={"compile_semantics": "vllm"}, engines=(engines.get("vllm").record(),)))
    found = {v.model_type: v for v in verdicts([run])}
    assert found["llama"].serves is Serves.SERVABLE and found["llama"].compiles is Compiles.YES
    assert found["bert"].compiles is Compiles.UNDECIDED
    assert found["opt"].serves is Serves.UNDECIDED
    (headline,) = headlines(tuple(found.values()))
    assert headline.text.endswith("would serve 2 of 3 model types (1 of them compile; 1 undecided)")
    assert headline.tallies[0].unserved_title == f"vLLM {engines.get('vllm').follows} (emulated) stops 0 model types; 1 undecided"


def test_a_diff_names_both_runs_engine_versions(sweep):
    from auditor.report.diff import diff_runs
    from auditor.report.diff_render import render_diff_html, render_diff_markdown

    run = read_run(sweep[0])
    found = diff_runs(run, run)
    text = "; ".join(engine.record().text for engine in engines.all())
    assert render_diff_markdown(found).count(f"| {text} |") == 2
    assert render_diff_html(found).count(f"<td>{text}</td>") == 2


def test_two_engines_get_one_line_with_the_types_they_split(tmp_path):
    """Crafted rows and a crafted second engine record (the second engine's folder is another
    branch's): the line counts each engine and the types one serves and the other does not, and
    summary.md and report.html fold the lists."""
    from auditor.core.engineinfo import EngineInfo
    from auditor.report.markdown import render_summary
    from auditor.report.page import render_report

    second = EngineInfo(name="sglang", title="SGLang", version="emulated", follows="0.5.23",
                        gates=("sglang/registry",), stopping=("sglang/registry",), policy="sglang")
    rows = [result("llama", "build", check="backend", component="registry"),
            result("llama", "build", check="backend", component="sglang/registry"),
            result("bloom", "unsupported", check="backend", component="registry", message="no backend class"),
            result("bloom", "build", check="backend", component="sglang/registry"),
            result("jamba", "build", check="backend", component="registry"),
            result("jamba", "unsupported", check="backend", component="sglang/registry", message="no attention"),
            result("mamba", "unsupported", check="backend", component="registry", message="no backend class"),
            result("mamba", "unsupported", check="backend", component="sglang/registry", message="no attention")]
    run = read_run(write_run(tmp_path / "run", rows, checks=("backend",),
                             engines=(engines.get("vllm").record(), second)))
    (headline,) = headlines(verdicts([run]))
    follows = engines.get("vllm").follows
    assert headline.text == (f"vLLM {follows} (Transformers backend, emulated) would serve 2 of 4 model types; "
                             "SGLang 0.5.23 (emulated) 2; 2 that one serves and the other does not")
    assert headline.only == (("vLLM", ("jamba",)), ("SGLang", ("bloom",)))
    summary = render_summary([run])
    assert f"**{headline.text}**" in summary.splitlines()[2]
    assert f"| vLLM {follows} (emulated) stops 2 model types: at | types | most common causes |" in summary
    assert "| backend/registry | 2 | no backend class (2: bloom, mamba) |" in summary
    assert "<details><summary>2 that one engine serves and another does not</summary>" in summary
    page = render_report([run])
    assert "<li>SGLang only (1): bloom</li>" in page and "<li>vLLM only (1): jamba</li>" in page
    # Only the type neither engine serves is out of every user's reach.
    assert {model_type for _, model_type in unreachable([run])} == {"mamba"}


def test_the_python_api_gives_the_same_verdicts(sweep):
    import auditor

    outdir, _ = sweep
    found = auditor.verdicts([outdir])
    assert [(v.model_type, v.text) for v in found] == [(v.model_type, v.text) for v in verdicts([read_run(outdir)])]
    assert {v.model_type for v in found if v.serves is Serves.SERVABLE} == {"llama", "gpt2"}


def test_the_engines_whole_answer_decides_where_the_run_has_it(tmp_path):
    """Crafted rows (the serves check needs vLLM: tests/engines/test_vllm_serves.py runs it for
    real): where a type has a serves row, its verdict is that row's (native or the Transformers
    backend, where it stops, or undecided for this machine's limit), not the backend gates';
    a skipped serves row (no architecture to give the engine) leaves the backend's gates to answer."""
    from dataclasses import replace

    from auditor.core.results import Result
    from auditor.core.status import Status

    record = replace(engines.get("vllm").record(), version="0.34.0")

    def served(model_type, status, message, fault="", **extras):
        return Result(model_type, "serves", Status(status), component="vllm", message=message, fault=fault,
                      extras=extras)

    rows = [result(t, "build", check="backend", component="registry") for t in ("llama", "gemma", "bloom", "mixtral", "bert")]
    rows += [result("opt", "unsupported", check="backend", component="registry", message="no backend class"),
             served("llama", "build", "servable: native LlamaForCausalLM", impl="native", served="LlamaForCausalLM"),
             served("gemma", "build", "servable: Transformers backend (TransformersForCausalLM)",
                    impl="Transformers backend", served="TransformersForCausalLM"),
             served("bloom", "undecided", "meta device: copy out of meta tensor", fault="environment"),
             served("mixtral", "unsupported", "ValueError: Model architectures ['MixtralX'] are not supported",
                    fault="engine", step="registry"),
             served("bert", "skipped", "no architecture")]
    run = read_run(write_run(tmp_path / "run", rows, checks=("backend", "serves"), engines=(record,)))
    found = {v.model_type: v for v in verdicts([run])}
    assert found["llama"].text == "servable: native LlamaForCausalLM" and found["llama"].native
    assert found["gemma"].text == "servable: Transformers backend (TransformersForCausalLM)"
    assert not found["gemma"].native
    assert found["bloom"].serves is Serves.UNDECIDED and found["bloom"].gate == "serves/vllm"
    assert found["mixtral"].serves is Serves.STOPS and found["mixtral"].fault == "engine"
    assert found["mixtral"].text.startswith("stops at serves/vllm: ValueError: Model architectures")
    # no serves answer: the backend's gates decide, as without the engine
    assert found["bert"].text == "servable" and not found["bert"].whole
    assert found["opt"].text == "stops at backend/registry: no backend class"
    (headline,) = headlines(tuple(found.values()))
    assert headline.text == ("vLLM 0.34.0 (own code, native or Transformers backend) would serve 3 of 6 model "
                             "types (1 native, 2 by the Transformers backend; 1 undecided)")
    # where they stop: the engine's whole answer split by the step of vLLM's its row names
    (tally,) = headline.tallies
    assert [g.gate for g in where_stopped(tally)] == ["backend/registry", "serves/vllm (registry)", "undecided"]
    from auditor.report.tables import csv_text, serve_frame

    table = {row["model_type"]: row for row in csv.DictReader(io.StringIO(csv_text(serve_frame([run]))))}
    assert table["llama"]["serve/vllm"] == "servable: native LlamaForCausalLM"
    assert table["llama"]["serve/vllm/path"] == "native LlamaForCausalLM"
    assert table["bloom"]["serve/vllm/fault"] == "environment"


def test_agree_compares_the_emulated_gates_only_with_what_the_engine_built_through_its_transformers_backend(tmp_path):
    """Crafted rows, as above (the serves check needs vLLM; the SGLang venv's tests compare a real
    run). A type vLLM built with a class of its own meets none of the Transformers backend's gates
    the emulation copies: it is listed as not compared, never as a difference (falcon: servable
    native while the emulation stops it at the registry, which sends it to vLLM's own class)."""
    from dataclasses import replace

    from auditor.core.results import Result
    from auditor.core.status import Status
    from auditor.report.agreement import compare_verdicts, render_verdicts

    record = replace(engines.get("vllm").record(), version="0.34.0")

    def served(model_type, status, message, fault="", **extras):
        return Result(model_type, "serves", Status(status), component="vllm", message=message, fault=fault,
                      extras=extras)

    native = "Transformers backend"
    rows = [result(t, "build", check="backend", component="registry") for t in ("llama", "gemma", "gemma4")]
    rows += [result(t, "unsupported", check="backend", component="registry", message="no backend class")
             for t in ("falcon", "aria")]
    rows += [served("llama", "build", "servable: native LlamaForCausalLM", impl="native"),
             served("falcon", "build", "servable: native FalconForCausalLM", impl="native"),
             served("gemma4", "unsupported", "AttributeError: 'NoneType' object has no attribute 'hidden_size'",
                    fault="engine", impl="native", step="constructor"),
             served("gemma", "build", "servable: Transformers backend (TransformersForCausalLM)", impl=native),
             served("aria", "build", "servable: Transformers backend (TransformersMultiModalMoEForCausalLM)",
                    impl=native)]
    run = read_run(write_run(tmp_path / "run", rows, checks=("backend", "serves"), engines=(record,)))

    found = compare_verdicts(run, "vllm", {})
    assert found.compared == 2 and found.native == ("falcon", "gemma4", "llama")
    assert [(d.model_type, d.why) for d in found.differences] == [("aria", "")]
    assert [d.model_type for d in found.unexplained] == ["aria"]
    text = render_verdicts(found)
    assert "2 types compared, 1 differ, 1 of them unexplained" in text
    assert "Not compared: 3 types vLLM built with a class of its own (native)" in text
    assert "falcon" not in text.split("| model type |")[1]  # in the not-compared line only
    explained = compare_verdicts(run, "vllm", {"aria": "the swept class's architecture is AriaModel"})
    assert not explained.unexplained and explained.differences[0].why.startswith("the swept class")
