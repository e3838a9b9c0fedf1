"""`auditor sweep --checks compile` end to end: real workers, real transformers, plugin model types
that fail to compile in one particular way each. The CPU path runs here; the CUDA path where a GPU is."""

from pathlib import Path

import pytest
import torch

from tests.conftest import read_rows, run_auditor

PLUGIN = str(Path(__file__).resolve().parent / "plugin_models.py")
REAL = "llama,gpt2,t5"
NO_CUDA = "CUDA is not available here: the compile check's CUDA path runs on a GPU machine (scripts/gpu_check.sh)"


def _compile_rows(out):
    return {row["model_type"]: row for row in read_rows(out)[1] if row["check"] == "compile"}


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("compile-cpu")
    proc = run_auditor("sweep", "--plugin", PLUGIN, "--models", f"{REAL},auditor_compile_.*", "--checks", "compile",
                       "--compile-semantics", "plain", "--device", "cpu", "--backend", "eager", "--jobs", "2", "--reruns", "0",
                       "--timeout", "240", "-o", str(out))
    return proc, out


def test_real_decoders_compile_to_one_graph(cpu_run):
    proc, out = cpu_run
    assert proc.returncode == 0, proc.stderr
    rows = _compile_rows(out)
    for name in ("llama", "gpt2"):
        row = rows[name]
        assert (row["status"], row["component"], row["policy"]) == ("compiled", "decoder", "fixed"), row
        extras = row["extras"]
        assert extras["graphs"] == 1 and extras["max_abs_diff"] <= extras["tolerance"]
        assert extras["compile_seconds"] > 0 and extras["first_run_seconds"] > 0
        assert 0 < extras["tiny_parameters"] < 5_000_000 and extras["backend"] == "eager"
    assert rows["llama"]["extras"]["class"] == "LlamaModel"
    # T5Stack's forward has no position_ids: vLLM's decorator refuses the class, so does ours.
    assert rows["t5"]["status"] == "decorate-error" and "position_ids" in rows["t5"]["message"]


def test_each_way_of_failing_has_its_status(cpu_run):
    rows = _compile_rows(cpu_run[1])
    expected = {
        "auditor_compile_ok": "compiled",
        "auditor_compile_break": "graph-break",
        "auditor_compile_counter": "recompiled",
        "auditor_compile_specialize": "recompiled",
        "auditor_compile_mismatch": "mismatch",
        "auditor_compile_eager_error": "eager-error",
        "auditor_compile_no_ids": "skipped",
    }
    assert {name: rows[name]["status"] for name in expected} == expected


def test_failures_say_why_and_where(cpu_run):
    rows = _compile_rows(cpu_run[1])
    broken = rows["auditor_compile_break"]["extras"]
    assert "graph_break" in broken["break_reason"] and "plugin_models.py" in broken["break_location"]
    assert "self.calls" in rows["auditor_compile_counter"]["extras"]["recompile_reason"]
    assert "input_ids.size()[1]" in rows["auditor_compile_specialize"]["extras"]["recompile_reason"]
    mismatch = rows["auditor_compile_mismatch"]["extras"]
    assert mismatch["max_abs_diff"] == pytest.approx(1.0) and mismatch["max_abs_diff"] > mismatch["tolerance"]
    assert "cannot be multiplied" in rows["auditor_compile_eager_error"]["message"]
    assert "main input is 'pixel_values'" in rows["auditor_compile_no_ids"]["message"]


def test_the_header_says_where_the_models_ran(cpu_run):
    header, _ = read_rows(cpu_run[1])
    assert header["run"]["device"] == "cpu" and header["run"]["checks"] == ["compile"]


def test_the_tiny_check_and_aot_eager_in_one_run(tmp_path):
    proc = run_auditor("sweep", "--models", "gpt2,vit", "--checks", "tiny,compile", "--backend", "aot_eager",
                       "--compile-semantics", "plain", "--jobs", "1", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = {(r["model_type"], r["check"]): r for r in read_rows(tmp_path)[1]}
    tiny = rows[("gpt2", "tiny")]
    assert tiny["status"] == "build" and tiny["extras"]["tiny_parameters"] < tiny["extras"]["default_parameters"]
    assert rows[("gpt2", "compile")]["status"] == "compiled"
    assert rows[("gpt2", "compile")]["extras"]["backend"] == "aot_eager"
    assert rows[("vit", "tiny")]["status"] == "build"
    # ViTModel's forward takes no input_ids: no decoder to compile the way vLLM would.
    assert rows[("vit", "compile")]["status"] == "decorate-error"


@pytest.mark.parametrize("args, message", [
    (["--device", "meta"], "run real models: pass --device cpu or --device cuda"),
    (["--backend", "no-such-backend"], "unknown --backend 'no-such-backend'"),
    (["--compile-policy", "vllm"], "--compile-policy 'vllm'"),
    (["--compile-semantics", "tgi"], "--compile-semantics 'tgi': valid: vllm, sglang, plain"),
])
def test_bad_compile_options_stop_before_any_work(tmp_path, args, message):
    proc = run_auditor("sweep", "--models", "gpt2", "--checks", "compile", *args, "-o", str(tmp_path / "run"))
    assert proc.returncode == 2 and message in proc.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: there is no refusal to see")
def test_cuda_without_cuda_is_refused_with_a_clear_message(tmp_path):
    proc = run_auditor("sweep", "--models", "gpt2", "--checks", "compile", "--device", "cuda", "-o", str(tmp_path))
    assert proc.returncode == 2
    assert "--device cuda:" in proc.stderr and "--device cpu" in proc.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_inductor_compiles_a_real_decoder(tmp_path):
    proc = run_auditor("sweep", "--models", "llama,gpt2", "--checks", "compile", "--device", "cuda",
                       "--jobs", "2", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    header, rows = read_rows(tmp_path)
    assert header["run"]["device"].startswith("cuda (")
    for row in rows:
        assert row["status"] == "compiled", row
        assert (row["extras"]["backend"], row["extras"]["device"]) == ("inductor", "cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_reports_graph_breaks_like_the_cpu(tmp_path):
    proc = run_auditor("sweep", "--plugin", PLUGIN, "--models", "auditor_compile_break,auditor_compile_ok",
                       "--checks", "compile", "--device", "cuda", "--backend", "aot_eager", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = _compile_rows(tmp_path)
    assert rows["auditor_compile_break"]["status"] == "graph-break"
    assert rows["auditor_compile_ok"]["status"] == "compiled"


def test_on_a_machine_with_cuda_the_default_backend_is_inductor(monkeypatch):
    """The CUDA branch of the option checks, with the one probe replaced (no GPU needed)."""
    from auditor.api.sweeps import validated_device
    from auditor.core import runinfo

    monkeypatch.setattr(runinfo, "cuda_problem", lambda: None)
    assert validated_device("cuda", None, ("compile",)) == ("cuda", "inductor")
    assert validated_device(None, None, ("compile",)) == ("cpu", "aot_eager")
    assert validated_device(None, None, ("build",)) == ("meta", "aot_eager")


def test_the_header_names_the_gpu(monkeypatch):
    from auditor.core.runinfo import describe_device

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "NVIDIA H200")
    assert describe_device("cuda") == "cuda (NVIDIA H200)" and describe_device("cpu") == "cpu"
