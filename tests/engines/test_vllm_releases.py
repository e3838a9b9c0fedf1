"""vLLM's release records (auditor.engines.vllm.releases): one per release, the emulation
following the installed one's or the newest. Where vLLM is installed, its record is held to
vLLM's own tables (the registry's backend classes, ModelConfig's suffix table, the num_experts
aliases, the per-layer line it cites): a port that forgot a change fails here."""

from __future__ import annotations

import importlib.util
import inspect
import os

import pytest
from packaging.version import Version

from auditor import engines
from auditor.engines.vllm import releases

HAS_VLLM = importlib.util.find_spec("vllm") is not None


def test_one_record_per_release_oldest_first_and_the_engine_follows_one():
    versions = [Version(r.version) for r in releases.RELEASES]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert {"0.33.0", "0.34.0"} <= {r.version for r in releases.RELEASES}
    vllm = engines.get("vllm")
    assert vllm.follows == releases.followed().version
    if not HAS_VLLM:  # none installed: the newest, and the sweep's note says which
        assert vllm.follows == releases.RELEASES[-1].version


def test_what_changed_in_0_34_0_is_in_its_record():
    old, new = releases.V0_33_0, releases.V0_34_0
    assert old.model_floor("aria") is None and new.model_floor("aria") == ("5.18.0", "Aria")
    assert new.transformers == "<5.23.0,>=5.16.1" and old.transformers == "<5.21.0,>=5.16.1"
    assert "GemmaForCausalLM" in new.backend_native and not old.backend_native
    assert new.citations["per-layer read"] != old.citations["per-layer read"]
    assert any("is_multimodal_model" in change for change in new.changes)
    assert new.floor("video inputs") == "5.18.0" and new.floor("MTP") == "5.20.0"
    # 0.33.0's VllmConfig checks no Triton; its CPU kernels' call sites were never read for it
    assert new.shims == ("triton-cpu", "moe-prepack", "activation-ops") and not old.shims
    assert set(new.own_config_types) == set(old.own_config_types) - {"minimax_m3_vl", "qwen3_asr"}


def test_every_shim_a_record_lists_is_named_and_cites_the_line_it_stands_in_for():
    from auditor.engines.vllm import shims

    for record in releases.RELEASES:
        for name in record.shims:
            assert name in shims.NAMES and record.citations[f"shim: {name}"]


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed: its own tables are the reference")
def test_the_installed_releases_record_matches_vllms_own_tables():
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import vllm
    from vllm.config import model as model_config
    from vllm.model_executor.models import registry
    from vllm.transformers_utils import config as hf_config

    record = releases.followed()
    assert Version(record.version).public == Version(vllm.__version__).public, "no record of this release"
    assert {cls for _, cls in registry._TRANSFORMERS_BACKEND_MODELS.values()} == record.backend_classes
    assert tuple(model_config._SUFFIX_TO_DEFAULTS) == record.suffixes
    assert tuple(hf_config.CONFIG_FIELD_ALIASES["num_experts"]) == record.num_experts
    sent = {arch for arch, (kind, _) in registry._TRANSFORMERS_SUPPORTED_MODELS.items() if kind == "transformers"}
    assert set(record.backend_native) <= sent
    path, line = record.citations["per-layer read"].rsplit(":", 1)
    source = inspect.getsourcefile(hf_config).replace(os.sep, "/")
    assert source.endswith(path)
    assert "num_attention_heads" in open(source).read().splitlines()[int(line) - 1]


@pytest.mark.skipif(not HAS_VLLM, reason="needs vLLM installed: its METADATA is what is read")
def test_the_requirement_of_the_installed_vllm_is_read_from_its_metadata_and_is_its_records(tmp_path):
    """What `--engine vllm` (upgrade-check's, the sweep's) reads for the installed release: its own
    Requires-Dist, equal to what the release record copied (moved here from the upgrade tests,
    which looked for a venv at a fixed path)."""
    from importlib import metadata

    from auditor.environments.engines import EngineSpec, transformers_requirement

    version = metadata.version("vllm")
    found = transformers_requirement("vllm", version, tmp_path)  # the installed METADATA: no index asked
    record = releases.followed()
    if record.version == version:
        assert found == record.transformers
    spec = EngineSpec("vllm", version, found)
    assert not spec.excludes(metadata.version("transformers"))  # this venv's own pair
    assert spec.excludes("5.16.0")
