"""`auditor upgrade-check --engine vllm==0.33.0` for real: vLLM installed into both sides, whose
backend rows then come from vLLM's own functions under each transformers.

Not in the default suite: it installs vLLM (and its CUDA torch) twice, several GB. `nox -s vllm`
runs it (AUDITOR_VLLM_UPGRADE=1); measured once by hand with uv's cache: see BENCHMARKS.md.
"""

from __future__ import annotations

import os

import pytest

from auditor.core.results import read_run
from tests.conftest import run_auditor

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.environ.get("AUDITOR_VLLM_UPGRADE"),
                                 reason="installs vLLM twice (GBs): `nox -s vllm` runs it")]

BASE, NEW = "5.18.0", "5.20.2"  # both inside vLLM 0.33.0's transformers<5.21.0,>=5.16.1


def test_both_sides_run_vllms_own_functions(tmp_path):
    out = tmp_path / "upgrade"
    run = run_auditor("upgrade-check", "--from", BASE, "--to", NEW, "--engine", "vllm==0.33.0",
                      "--models", "llama,gpt2", "--checks", "build,backend", "--jobs", "1", "-o", str(out),
                      env={"VLLM_TARGET_DEVICE": "cpu"}, timeout=3600)
    assert run.returncode in (0, 1), run.stderr[-4000:]
    for side, version in (("base", BASE), ("new", NEW)):
        sweep = read_run(out / side)
        assert sweep.info.transformers == version
        assert sweep.info.installed_engines.get("vllm") == "0.33.0"  # the header: vLLM's own code was there
        assert sweep.info.label == f"{side}: transformers {version}, vllm 0.33.0"
        own = [r for r in sweep.results if r.check == "backend" and r.policy == "vllm"]
        assert {r.model_type for r in own} == {"llama", "gpt2"}, "no rows of vLLM's own functions"
        ours = [(r.model_type, r.column, r.message) for r in sweep.results if r.status.value == "auditor-error"]
        assert ours == [], ours
