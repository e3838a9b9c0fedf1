"""`auditor sweep --engine NAME==VERSION`: an engine's own code from a venv of its own, beside this run.

The refusals are real: each release's transformers requirement is read from the package index
(pip's metadata of vllm 0.33.0, sglang 0.5.23), and every one excludes the transformers of this
venv (5.24), so they exit 2 before anything is made. The whole path (install, this sweep, the
venv's sweep, one report of both) runs with the fake noxfile of the upgrade-check tests: a real
engine venv is a 9 GB install, minutes beyond CI's budget (the closing notes record real runs),
so its "install" logs a line and its "sweep" copies a prepared run whose header says vLLM 0.33.0
ran it; this environment's sweep is real. An engine the venv takes is then given by its cached
requirement (the test seam the venvs' cache is): no real release takes transformers 5.24.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import pytest

from auditor import engines
from auditor.cli import main
from auditor.core.results import Result, read_run
from auditor.core.status import Status
from tests.report.helpers import write_run
from tests.upgrade.fakes import use_fake_noxfile

TRANSFORMERS = metadata.version("transformers")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A venv home of the test's own; the fake noxfile; the current directory a scratch one."""
    monkeypatch.setenv("AUDITOR_VENVS", str(tmp_path / "venvs"))
    return use_fake_noxfile(tmp_path, monkeypatch)


@pytest.mark.parametrize(("engine", "message"), [
    ("vllm==9.9.9", "vllm==9.9.9 is not a release on the package index; its newest: "),
    ("vllm==0.33.0", f"transformers {TRANSFORMERS} (installed here, under audit) is outside what vllm 0.33.0 "
                     "accepts: it requires transformers<5.21.0,>=5.16.1 (its Requires-Dist)"),
    ("sglang==0.5.23", "it requires transformers==5.19.0 (its Requires-Dist)"),
    ("sglong==1.0", "unknown engine; known: vllm, sglang"),
])
def test_a_release_that_cannot_serve_this_audit_exits_2_before_anything_is_made(home, capsys, engine, message):
    if engine != "sglong==1.0" and TRANSFORMERS in ("5.19.0",):
        pytest.skip("this transformers is one the engine takes")
    assert main(["sweep", "--engine", engine, "--models", "gpt2", "--checks", "build", "-o", str(home / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (home / "out").exists() and not (home / "log.txt").exists()


def test_an_engine_not_installed_here_needs_its_version(home, capsys):
    if engines.get("vllm").installed:
        pytest.skip("vLLM is installed here")
    assert main(["sweep", "--engine", "vllm", "--models", "gpt2", "--checks", "build", "-o", str(home / "out")]) == 2
    assert ("--engine vllm: vllm is not installed here; name its version, such as "
            f"{engines.example_requirement('vllm')}") in capsys.readouterr().err  # the newest release record


def _engine_run(home: Path) -> None:
    """The run the fake venv's sweep hands back (new.jsonl): vLLM 0.33.0's own answer on gpt2 and llama."""
    record = replace(engines.get("vllm").record(), version="0.33.0", follows="0.33.0")
    rows = [Result("gpt2", "serves", Status.UNDECIDED, component="vllm", fault="environment",
                   message="NotImplementedError: torch.ops._C.gelu_new: a kernel this wheel lacks on a CPU"),
            Result("llama", "serves", Status.BUILD, component="vllm", message="servable: native LlamaForCausalLM",
                   extras={"impl": "native", "served": "LlamaForCausalLM"})]
    write_run(home / "prepared", rows, checks=("backend", "serves"), engines=(record,), transformers=TRANSFORMERS,
              label="vLLM 0.33.0 (venv)")
    (home / "new.jsonl").write_text((home / "prepared" / "results.jsonl").read_text())


def _engine_venv(home: Path) -> None:
    """vLLM 0.33.0's venv as the fake noxfile gives it: cached as taking any transformers, its sweep's run prepared."""
    cache = home / "venvs" / "engines" / "vllm-0.33.0.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"engine": "vllm==0.33.0", "transformers": ""}))  # takes any transformers
    _engine_run(home)


def test_the_venvs_own_code_rows_are_reported_beside_this_run(home, capsys):
    _engine_venv(home)
    out = home / "out"
    code = main(["sweep", "--engine", "vllm==0.33.0", "--models", "gpt2,llama", "--checks", "build,backend",
                 "--jobs", "2", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    log = (home / "log.txt").read_text().splitlines()
    # installed first (before this sweep wrote anything), then swept with the checks of its own code
    assert [line.split()[0] for line in log] == ["install", "sweep"]
    assert log[0] == f"install new transformers=={TRANSFORMERS}"
    sweep = log[1].split()
    assert sweep[sweep.index("--checks") + 1] == "backend,serves" and sweep[sweep.index("--policies") + 1] == "vllm"
    assert sweep[sweep.index("--output") + 1] == str((out / "engines" / "vllm-0.33.0").resolve())
    # this environment's run is its own; the report holds both
    assert {r.model_type for r in read_run(out).results} == {"gpt2", "llama"}
    assert read_run(out / "engines" / "vllm-0.33.0").info.installed_engines["vllm"] == "0.33.0"
    table = list(csv.DictReader(io.StringIO((out / "serve.csv").read_text())))
    venv = {row["model_type"]: row for row in table if row["environment"] == "vLLM 0.33.0 (venv)"}
    assert venv["llama"]["serve/vllm"] == "servable: native LlamaForCausalLM"
    assert venv["gpt2"]["serve/vllm/verdict"] == "undecided" and venv["gpt2"]["serve/vllm/fault"] == "environment"
    assert len({row["environment"] for row in table}) == 2
    assert "vLLM 0.33.0 (venv): vLLM 0.33.0 (own code, native or Transformers backend) would serve 1 of 2" in err
    assert "vLLM 0.33.0 (own code, native or Transformers backend)" in (out / "report.html").read_text()


def test_a_check_only_the_engines_venv_answers_runs_there_and_junit_and_markdown_hold_its_rows(home, capsys):
    # `serves` needs vLLM or SGLang, neither installed here: it is validated and run in the engine's
    # venv (the fake noxfile's sweep hands back vLLM 0.33.0's serves rows), and this environment
    # sweeps the rest (build); --junit and --markdown are written over both runs.
    if any(engine.installed for engine in engines.all() if engine.serves is not None):
        pytest.skip("an engine that answers `serves` is installed here")
    _engine_venv(home)
    out = home / "out"
    code = main(["sweep", "--engine", "vllm==0.33.0", "--models", "gpt2,llama", "--checks", "build,serves",
                 "-o", str(out), "--junit", str(home / "junit.xml"), "--markdown", str(home / "summary.md")])
    err = capsys.readouterr().err
    assert code == 0, err
    sweep = (home / "log.txt").read_text().splitlines()[1].split()
    assert sweep[sweep.index("--checks") + 1] == "serves"
    assert {r.check for r in read_run(out).results} == {"build"}  # here: what runs here
    junit = (home / "junit.xml").read_text()
    for model_type in ("gpt2", "llama"):  # this run's rows and the venv's
        assert f'<testcase classname="{model_type}" name="build"' in junit
        assert f'<testcase classname="{model_type}" name="serves/vllm"' in junit
    summary = (home / "summary.md").read_text()
    assert "| serves/vllm | - | 1 build, 1 undecided (gpt2) |" in summary
    assert "**serves/vllm (vLLM 0.33.0 (venv))** · undecided (1): gpt2" in summary


def test_with_no_engine_to_answer_serves_the_refusal_names_one(home, capsys):
    if any(engine.installed for engine in engines.all() if engine.serves is not None):
        pytest.skip("an engine that answers `serves` is installed here")
    assert main(["sweep", "--models", "gpt2", "--checks", "build,serves", "-o", str(home / "out")]) == 2
    err = capsys.readouterr().err
    assert f"or let an engine's own venv answer it: --engine {engines.example_requirement('vllm')}" in err
    assert not (home / "out").exists()


def test_the_engines_venv_sweeps_the_same_checkpoints_and_its_own_weight_loader(home, capsys):
    # `--checkpoint` selects the same folder there (by absolute path: the venv's sweep runs
    # elsewhere), and `weights` runs there too, for the engine's own loader (weights/vllm rows).
    import transformers

    from tests.checks.checkpoint_files import model_tensors, write_checkpoint

    _engine_venv(home)
    config = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, vocab_size=1024, architectures=["LlamaForCausalLM"])
    folder = write_checkpoint(home / "my-llama", config, model_tensors(config))
    code = main(["sweep", "--engine", "vllm==0.33.0", "--checkpoint", "my-llama", "--checks", "build,weights",
                 "-o", str(home / "out")])
    assert code in (0, 1), capsys.readouterr().err
    sweep = (home / "log.txt").read_text().splitlines()[1].split()
    assert sweep[sweep.index("--checks") + 1] == "weights,serves"
    assert sweep[sweep.index("--checkpoint") + 1] == str(folder.resolve())


def test_force_transformers_takes_a_release_that_excludes_this_transformers_and_marks_the_pairing(home):
    # The same real requirement as the refusal above (vllm 0.33.0: transformers<5.21.0): forced, the
    # release is planned, marked as a forced pairing, instead of refused.
    from auditor.environments.engine_sweeps import checked_engines
    from auditor.sweeping.options import make_request

    if TRANSFORMERS == "5.19.0":
        pytest.skip("this transformers is one the engine takes")
    request = make_request(models=["gpt2"], checks="build", engines=["vllm==0.33.0"], force_transformers=True)
    ((spec, engine),) = checked_engines(request)
    assert spec.forced and spec.excludes(TRANSFORMERS) and engine.name == "vllm"
    assert spec.requirement == "vllm==0.33.0"
