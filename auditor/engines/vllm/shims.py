"""Environment shims: what this machine lacks that vLLM's own code asks of it before the
auditor's question is reached, and how the auditor stands in for it. One place; each shim is
scoped to the call that needs it, restored after, and named in the run header (`NAMES`, through
the engine's record) and on every row computed under it (extras `shims`).

* `triton-cpu`: vLLM 0.34.0's CPU platform refuses an x86 CPU without Triton for CPUs
  (vllm/platforms/cpu.py:242, "vLLM on x86 CPUs requires Triton (triton-cpu)", read when a
  VllmConfig is made), which is the case of vLLM's CUDA wheel on a machine without a GPU.
  The auditor builds on the meta device, where no kernel runs, so it sets
  `vllm.triton_utils.HAS_TRITON = True` while a VllmConfig is made, and only then: the layers
  that get_model builds afterwards see vLLM's own answer (False) and choose as they would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

TRITON_CPU = "triton-cpu"
# name -> what it stands in for (the run header's words)
NAMES = {TRITON_CPU: "vllm.triton_utils.HAS_TRITON set while a VllmConfig is made, on an x86 CPU without "
                     "Triton for CPUs (vLLM >= 0.34.0 refuses it: platforms/cpu.py:242; the meta device runs "
                     "no kernel)"}

APPLIED: set[str] = set()  # the shims this process has used: its rows say so


def _needs_triton_cpu() -> bool:
    """Where the installed release refuses an x86 CPU without Triton for CPUs (its record's
    `shims`, from 0.34.0: 0.33.0's VllmConfig makes no such check, and no shim touches it)."""
    import platform

    from auditor.engines.vllm.releases import followed

    if TRITON_CPU not in followed().shims:
        return False
    import vllm.triton_utils as triton_utils
    from vllm.platforms import current_platform

    return (current_platform.is_cpu() and not triton_utils.HAS_TRITON
            and platform.machine().lower() in {"x86_64", "amd64", "i686", "x86"})


@contextlib.contextmanager
def config_shims() -> Iterator[tuple[str, ...]]:
    """The shims making a VllmConfig needs here, for the block (yields their names)."""
    if not _needs_triton_cpu():
        yield ()
        return
    import vllm.triton_utils as triton_utils

    triton_utils.HAS_TRITON = True
    APPLIED.add(TRITON_CPU)
    try:
        yield (TRITON_CPU,)
    finally:
        triton_utils.HAS_TRITON = False


def needed() -> dict[str, str]:
    """The shims vLLM's own code will need in this process (name -> what it stands in for): the
    run header's (`Engine.shims`); imports vLLM's platform (about 3 s)."""
    return {TRITON_CPU: NAMES[TRITON_CPU]} if _needs_triton_cpu() else {}


def applied() -> dict:
    """Extras for a row computed in this process: the shims used, if any."""
    return {"shims": sorted(APPLIED)} if APPLIED else {}
