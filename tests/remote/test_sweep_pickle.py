"""`auditor sweep` with the pickle check: real workers, a real receiver, a user's remote code."""

import importlib.util
import json

import pytest

from auditor.core.results import read_run
from tests.conftest import ROOT, run_auditor
from tests.remote.conftest import FIXTURE, KILLER

POLICIES = ("legacy", "fixed", "fixed-no-config-skip")
TYPES = ["auditor_kills_receiver", "llama", "qwen2_vl", "remote:tiny-llama-2.5"]
HAVE_RAY = importlib.util.find_spec("ray") is not None


@pytest.fixture(scope="module")
def pickle_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pickle")
    # One worker: the type that kills the receiver runs first (types are sorted, remote code
    # comes last), so every later type needs a receiver started again. The pickle check alone:
    # these tests read only its rows (the others' builds would only cost time).
    proc = run_auditor("sweep", "--plugin", KILLER, "--models", "auditor_kills_receiver,llama,qwen2_vl",
                       "--remote-code", str(FIXTURE), "--checks", "pickle", "--jobs", "1", "--reruns", "0",
                       "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return {(r.model_type, r.component, r.policy): r for r in read_run(out).results if r.check == "pickle"}


def test_every_type_fills_every_pickle_cell(pickle_run):
    for model_type in TYPES:
        for component in ("by-ref-builtin", "by-ref-remote", "by-value-remote", "ray-by-value-remote"):
            assert (model_type, component, "") in pickle_run, (model_type, component)
        for policy in POLICIES:
            assert (model_type, "far-build:decoder", policy) in pickle_run, (model_type, policy)


def _cell(run, model_type):
    return lambda component, policy="": run[(model_type, component, policy)]


def test_the_expected_columns_for_builtin_types(pickle_run):
    for model_type in ("llama", "qwen2_vl"):
        row = _cell(pickle_run, model_type)
        assert row("by-ref-builtin").status.value == "build"
        assert row("by-ref-remote").status.value == "error"
        assert row("by-ref-remote").signature == "ModuleNotFoundError: No module named 'transformers_modules.?'"
        assert row("by-ref-remote").extras["expected"] is True
        assert row("by-value-remote").status.value == "build"
        assert "_hyphen_3_dot_5_hyphen_Twin." in row("by-value-remote").extras["class"]
        assert row("far-build:decoder", "fixed").status.value == "build"
        assert row("far-build:decoder", "fixed-no-config-skip").status.value == "refused"
    assert pickle_run[("qwen2_vl", "far-build:decoder+encoders", "fixed")].status.value == "build"


def test_a_receiver_that_died_is_a_crash_row_and_the_sweep_goes_on(pickle_run):
    row = pickle_run[("auditor_kills_receiver", "by-ref-builtin", "")]
    assert row.status.value == "crash" and row.message == "Crash: receiver process exited with code 7"
    # Not from transformers: no twin, said plainly.
    assert pickle_run[("auditor_kills_receiver", "by-value-remote", "")].status.value == "skipped"
    assert pickle_run[("llama", "by-ref-builtin", "")].status.value == "build"


def test_a_users_remote_code_gets_the_same_audit(pickle_run):
    row = _cell(pickle_run, "remote:tiny-llama-2.5")
    assert row("by-ref-builtin").status.value == "skipped"
    assert row("by-ref-remote").status.value == "error"
    assert row("by-value-remote").status.value == "build"
    assert row("by-value-remote").extras["class"].startswith("transformers_modules.tiny_hyphen_llama_hyphen_2_dot_5.")
    assert row("far-build:decoder", "fixed").status.value == "build"
    assert row("far-build:decoder", "fixed").message == "TinyLlamaModel"


def test_ray_column(pickle_run):
    row = pickle_run[("llama", "ray-by-value-remote", "")]
    if HAVE_RAY:
        assert row.status.value == "build", row.message
    else:
        assert row.status.value == "skipped" and "Ray is not installed" in row.message


# -- security: trust_remote_code only for directories named with --remote-code ------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--models", str(FIXTURE)], "not paths or Hub ids"),
        (["--models", "some-org/some-model"], "not paths or Hub ids"),
        (["--remote-code", "no/such/dir"], "not a directory"),
        (["--remote-code", str(ROOT / "tests" / "fixtures")], "cannot read config.json"),
    ],
)
def test_paths_and_hub_ids_are_refused_before_any_work(tmp_path, args, expected):
    proc = run_auditor("sweep", *args, "-o", str(tmp_path / "out"), cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("auto_map", "expected"),
    [
        ({}, "no auto_map.AutoConfig"),
        ({"AutoConfig": "other/repo--configuration_x.XConfig"}, "point at code in another repository"),
    ],
)
def test_remote_code_that_is_not_local_is_refused(tmp_path, auto_map, expected):
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({"model_type": "x", "auto_map": auto_map}))
    proc = run_auditor("sweep", "--remote-code", str(directory), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and expected in proc.stderr
