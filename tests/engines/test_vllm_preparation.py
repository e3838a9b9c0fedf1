"""What vLLM's own code makes once per worker, before the first model type's clock
(auditor.engines.vllm.preparation, the engine's warm_up), and the registry inspection retried
in-process where vLLM's subprocess fails for the machine's reasons. Real vLLM, real processes;
needs vLLM (run with VLLM_TARGET_DEVICE=cpu on a CPU)."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'model-sweep-auditor[vllm]')")
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

pytestmark = pytest.mark.slow  # importing vLLM alone takes half a minute here; the tests after it, seconds

_STARTED: list[list] = []  # while a list is in it, the processes this one starts are noted there


def _note_processes(event: str, args) -> None:
    if event == "subprocess.Popen" and _STARTED:
        _STARTED[-1].append(args[1])


sys.addaudithook(_note_processes)  # an audit hook cannot be removed: it notes only while asked


def test_a_workers_start_up_makes_what_every_serves_cell_needs_so_the_first_cell_pays_only_its_own_work():
    import torch.distributed

    from auditor.checks import Options
    from auditor.engines.vllm import preparation
    from auditor.executors.worker import prepare, run_case
    from auditor.models.cases import ModelCase

    options = Options(policies=("vllm",), checks=("serves",))
    selected = prepare((), options)  # the pool's worker: before it says it is ready, off any clock
    assert "vllm.model_executor.model_loader" in sys.modules and torch.distributed.is_initialized()
    assert preparation._MADE == {"process group", "model-info cache"}

    _STARTED.append([])
    try:
        messages = list(run_case(ModelCase("llama"), selected, options))
    finally:
        started = _STARTED.pop()
    (row,) = [m[1] for m in messages if m[0] == "result"]
    assert row["status"] == "build" and row["message"] == "servable: native LlamaForCausalLM"
    # no registry subprocess (vLLM again, 12-30 s) and no process group inside the cell
    assert started == [], started
    assert "inspected_in_process" not in row["extras"]


def test_an_inspection_that_fails_in_vllms_subprocess_but_not_here_is_retried_in_process(tmp_path, monkeypatch):
    from vllm.model_executor.models.registry import ModelRegistry

    from auditor.engines.vllm.preparation import inspection_retried

    # A class vLLM's cache has never seen (a cache miss sends it to the subprocess), importable here.
    (tmp_path / "auditor_inspected_here.py").write_text(
        "import torch\n\nclass AuditorInspectedHereForCausalLM(torch.nn.Module):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    arch = "AuditorInspectedHereForCausalLM"
    ModelRegistry.register_model(arch, f"auditor_inspected_here:{arch}")
    # The machine's reason: an interpreter that cannot start (no standard library where it looks).
    # vLLM's subprocess dies with it at once; this process, already running, is not concerned.
    monkeypatch.setenv("PYTHONHOME", str(tmp_path / "no-python-here"))

    _STARTED.append([])
    try:
        assert ModelRegistry._try_inspect_model_cls(arch) is None  # vLLM alone: "failed to be inspected"
        with inspection_retried() as retried:
            info = ModelRegistry._try_inspect_model_cls(arch)
        after = ModelRegistry._try_inspect_model_cls(arch)
    finally:
        started = _STARTED.pop()
    assert len(started) == 1  # vLLM's subprocess really ran, and failed, once (its answer is cached)
    assert info is not None and info.architecture == arch
    assert retried == [arch]  # what the row says (extras `inspected_in_process`)
    assert after is None  # vLLM's own function is put back after the block
