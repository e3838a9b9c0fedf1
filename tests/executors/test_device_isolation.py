"""A sticky device error rewrites no other type's verdict (real workers, real transformers).

On CUDA a device-side assert leaves its process's context unusable: every later kernel there fails
the same way. This machine has no GPU; tests/plugins/poison_models.py's types do to their worker
what such an error does (every later module forward raises `torch.AcceleratorError`), one at once
(the culprit's own row carries it) and one latently (its rows pass; the worker's probe after it
finds the process broken). With one worker (`--jobs 1`) they run first (the sweep takes types in
name order), then five real types: the real types' rows must equal those of a clean run, and no
row but the poisoners' carries the error.
"""

import pytest

from tests.conftest import PLUGINS, read_rows, run_auditors

POISON = str(PLUGINS / "poison_models.py")
# Five real types of unlike kinds (ALiBi, Conv1D, rotary, learned positions, q/k norms): each is
# compiled twice (both runs), which made this module's two sweeps the suite's longest setup.
REAL = "bloom,gpt2,llama,opt,qwen3"
# compile runs the models, and so meets the broken process (the eager backend: the forward calls are
# what it takes, seconds less a type); tiny comes after it, so the culprit's checks left unrun show
# where they ran.
SWEEP = ("--checks", "build,compile,tiny", "--compile-ungated", "--backend", "eager", "--jobs", "1", "--reruns", "0")
CELL = ("model_type", "check", "component", "policy", "status", "fault", "message")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    poisoned, clean = tmp_path_factory.mktemp("poisoned"), tmp_path_factory.mktemp("clean")
    procs = run_auditors([
        ("sweep", "--plugin", POISON, "--models", f"auditor_poisoner,auditor_poisoner_latent,{REAL}", *SWEEP,
         "-o", str(poisoned)),
        ("sweep", "--models", REAL, *SWEEP, "-o", str(clean)),
    ])
    for proc in procs:
        assert proc.returncode in (0, 1), proc.stderr
    return read_rows(poisoned)[1], read_rows(clean)[1]


def _cells(rows, types):
    return sorted(tuple(row[key] for key in CELL) for row in rows if row["model_type"] in types)


def test_the_real_types_rows_equal_a_clean_run(runs):
    poisoned, clean = runs
    real = set(REAL.split(","))
    assert _cells(poisoned, real) == _cells(clean, real)
    assert {row["model_type"] for row in clean} == real
    assert any(row["status"] == "compiled" for row in clean)  # the compile check really ran them


def test_no_row_but_the_culprits_carries_the_error(runs):
    poisoned, _ = runs
    carriers = {row["model_type"] for row in poisoned if "AcceleratorError" in row["message"]}
    assert carriers == {"auditor_poisoner"}


def test_the_culprits_row_stands_and_its_unrun_checks_ran_in_a_fresh_worker(runs):
    poisoned, _ = runs
    rows = {row["check"]: row for row in poisoned if row["model_type"] == "auditor_poisoner"}
    assert set(rows) == {"build", "compile", "tiny"}
    compile_row = rows["compile"]
    # The machine's failure: its own status and fault, never `skipped` and never the model's.
    assert (compile_row["status"], compile_row["fault"]) == ("device-error", "environment")
    assert compile_row["message"] == "AcceleratorError: CUDA error: device-side assert triggered"
    assert rows["tiny"]["status"] == "build" and rows["tiny"]["worker"] != compile_row["worker"]
    real_workers = {row["worker"] for row in poisoned if row["model_type"] in REAL.split(",")}
    assert compile_row["worker"] not in real_workers


def test_a_type_after_which_the_probe_fails_is_rerun_and_the_rerun_decides(runs):
    poisoned, _ = runs
    latent = [row for row in poisoned if row["model_type"] == "auditor_poisoner_latent"]
    assert sorted(row["check"] for row in latent) == ["build", "compile", "tiny"]  # the first run's rows are gone
    assert {row["status"] for row in latent} == {"build", "compiled"}
    assert all("failed its probe after it (AcceleratorError: CUDA error: device-side assert triggered)"
               in row["extras"]["rerun_after"] for row in latent)
    # The rerun broke its worker too: the real types after it ran in yet another one.
    real_workers = {row["worker"] for row in poisoned if row["model_type"] in REAL.split(",")}
    assert len(real_workers) == 1 and not real_workers & {row["worker"] for row in latent}


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory):
    """The same on a local Ray cluster of one CPU: the retired Ray worker process exits."""
    out = tmp_path_factory.mktemp("ray")
    (proc,) = run_auditors([("sweep", "--plugin", POISON, "--models", f"auditor_poisoner,auditor_poisoner_latent,{RAY_REAL}",
                             *SWEEP, "--executor", "ray", "-o", str(out))])
    assert proc.returncode in (0, 1), proc.stderr
    return read_rows(out)[1]


RAY_REAL = "opt"  # one real type: the Ray path is what is new here, the ten real types are above


def test_on_ray_no_row_but_the_culprits_carries_the_error_and_the_rest_equal_a_clean_run(ray_run, runs):
    _, clean = runs
    assert {row["model_type"] for row in ray_run if "AcceleratorError" in row["message"]} == {"auditor_poisoner"}
    real = set(RAY_REAL.split(","))
    assert _cells(ray_run, real) == _cells(clean, real)
    poisoner = {row["check"]: row for row in ray_run if row["model_type"] == "auditor_poisoner"}
    assert poisoner["compile"]["status"] == "device-error" and poisoner["tiny"]["status"] == "build"
    assert poisoner["tiny"]["worker"] != poisoner["compile"]["worker"]  # host:pid: another process
    latent = [row for row in ray_run if row["model_type"] == "auditor_poisoner_latent"]
    assert len(latent) == 3 and all("rerun_after" in row["extras"] for row in latent)
