"""The `vllm-config` check: vLLM's own config classes, when vLLM is installed."""

import importlib.util

import pytest

from auditor.core.results import read_run
from tests.conftest import run_auditor

HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed here, so the check is not refused")
def test_refused_up_front_without_vllm(tmp_path):
    proc = run_auditor("sweep", "--checks", "build,vllm-config", "--models", "llama", "-o", str(tmp_path))
    assert proc.returncode == 2
    assert "needs vllm installed" in proc.stderr
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.slow
@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed (pip install 'model-sweep-auditor[vllm]')")
def test_types_vllm_reconfigures_get_rows_with_its_class(tmp_path):
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    from auditor.engines.vllm.config import config_class as vllm_config_class

    replaced = [name for name in dict.keys(_CONFIG_REGISTRY) if _known(name) and vllm_config_class(name)]
    assert replaced, "vLLM replaces no transformers config class any more"
    models = ",".join([*replaced[:4], "llama"])
    proc = run_auditor("sweep", "--checks", "build,vllm-config", "--policies", "legacy,fixed",
                       "--models", models, "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = {(r.model_type, r.component, r.policy): r for r in read_run(tmp_path).results if r.check == "vllm-config"}
    assert rows[("llama", "build", "")].status.value == "skipped"
    for name in replaced[:4]:
        build = rows[(name, "build", "")]
        assert build.status.value != "skipped"
        assert ("decoder" in {key[1] for key in rows if key[0] == name}), name
        if build.status.value == "build":
            cls = vllm_config_class(name)
            assert build.extras["config_class"] == f"{cls.__module__}.{cls.__qualname__}"


def _known(name):
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    return name in MODEL_MAPPING_NAMES
