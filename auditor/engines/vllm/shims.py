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

Two more stand in for kernels of vLLM's CPU wheel (`vllm._C`, which CPU platforms load in
`import_kernels`, vllm/platforms/cpu.py:663-699) that the CUDA wheel lacks, where the meta
device never needs their result. Each is a `torch.ops._C.<kernel>` that exists only while
get_model runs (a proxy of the namespace, put back after) and that refuses any tensor not on the
meta device, so no verdict can rest on it:

* `moe-prepack`: `prepack_moe_weight`, which the CPU MoE experts' `process_weights_after_loading`
  calls after the dummy load (vllm/_cpu_ops.py:1530-1536, from
  model_executor/layers/fused_moe/experts/cpu_moe.py:269-279) to write a packed copy of each
  expert weight into `torch.empty_like(weight)`. On meta weights there is nothing to pack: the
  stand-in writes nothing, and vLLM's own code around it (the padding, `replace_parameter`)
  runs. Not run: the packing itself.
* `activation-ops`: `gelu_new`, `gelu_fast`, `gelu_quick`, the handles NewGELU, FastGELU and
  QuickGELU take in `__init__` on any CPU (model_executor/layers/activation.py:559-566,
  592-599, 624-632) and call in `forward_cpu` only on POWERPC (581-584, 613-616, 646-649; an
  x86 CPU runs forward_native). Not run: nothing (the constructor only holds the handle).

One more is not scoped to a call, because vLLM resolves its platform once per process:

* `cpu-target`: `VLLM_TARGET_DEVICE=cpu`, vLLM's own switch to its CPU platform, set in a process
  where it is unset and vLLM's own detection (`resolve_current_platform_cls_qualname`,
  vllm/platforms/__init__.py) finds no platform, which is the case of its CUDA wheel on a
  machine without a GPU: every own-code row would be `Failed to infer device type` (an
  environment limit) there. Set before vLLM's platform is first read (`target_device`: the run
  header's `needed`, a worker's warm-up, the process group), so that the workers a sweep starts
  later inherit it. A machine with a GPU, or a user's own VLLM_TARGET_DEVICE, is left alone.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator

TRITON_CPU = "triton-cpu"
CPU_TARGET = "cpu-target"
TARGET_ENV = "VLLM_TARGET_DEVICE"
TARGET_MARK = "AUDITOR_VLLM_CPU_TARGET"  # set beside it: the processes started after know who set it
MOE_PREPACK = "moe-prepack"
ACTIVATION_OPS = "activation-ops"
# The kernel libraries vLLM's CPU platform loads (platforms/cpu.py:663-699, import_kernels): a CPU
# wheel ships one, the CUDA wheel none.
_CPU_KERNEL_LIBRARIES = ("vllm._C", "vllm._C_AVX512", "vllm._C_AVX2")
# shim -> the torch.ops._C kernels it stands in for
KERNELS = {MOE_PREPACK: ("prepack_moe_weight",), ACTIVATION_OPS: ("gelu_new", "gelu_fast", "gelu_quick")}
# name -> what it stands in for (the run header's words)
NAMES = {CPU_TARGET: "VLLM_TARGET_DEVICE=cpu (vLLM's own switch to its CPU platform), unset here and no platform "
                     "detected by vLLM's own code (its CUDA wheel without a GPU: \"Failed to infer device type\")",
         TRITON_CPU: "vllm.triton_utils.HAS_TRITON set while a VllmConfig is made, on an x86 CPU without "
                     "Triton for CPUs (vLLM >= 0.34.0 refuses it: platforms/cpu.py:242; the meta device runs "
                     "no kernel)",
         MOE_PREPACK: "torch.ops._C.prepack_moe_weight, missing from vLLM's CUDA wheel, as a meta-device no-op in "
                      "the CPU MoE experts' process_weights_after_loading (_cpu_ops.py:1530-1536; the meta weights "
                      "hold nothing to pack; not run: the packing)",
         ACTIVATION_OPS: "torch.ops._C.gelu_new/gelu_fast/gelu_quick, missing from vLLM's CUDA wheel, as handles "
                         "the activations take at construction (activation.py:566, 599, 632) and an x86 CPU never "
                         "calls (forward_cpu runs forward_native there); meta tensors only"}

APPLIED: set[str] = set()  # the shims this process has used: its rows say so


def target_device() -> None:
    """`cpu-target`: VLLM_TARGET_DEVICE=cpu in this process (and the processes it starts) where it
    is unset and vLLM's own platform detection finds none; before vLLM's platform is first read."""
    import os

    if os.environ.get(TARGET_MARK) == "1" and os.environ.get(TARGET_ENV) == "cpu":
        APPLIED.add(CPU_TARGET)  # set by the process that started this one
    if CPU_TARGET in APPLIED or TARGET_ENV in os.environ:
        return
    import vllm.platforms as platforms

    if platforms._current_platform is not None:  # resolved already: too late to choose
        return
    if platforms.resolve_current_platform_cls_qualname().endswith(".UnspecifiedPlatform"):
        os.environ[TARGET_ENV] = "cpu"
        os.environ[TARGET_MARK] = "1"
        APPLIED.add(CPU_TARGET)


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


def _missing_kernels() -> dict[str, tuple[str, ...]]:
    """shim -> its kernels, for the kernel shims the installed release's record lists, on a CPU
    platform whose wheel has none of the kernel libraries vLLM's CPU platform loads (read
    without importing them: loading is vLLM's own step)."""
    from auditor.engines.vllm.releases import followed

    wanted = [name for name in KERNELS if name in followed().shims]
    if not wanted:
        return {}
    from vllm.platforms import current_platform

    if not current_platform.is_cpu() or any(importlib.util.find_spec(m) for m in _CPU_KERNEL_LIBRARIES):
        return {}
    return {name: KERNELS[name] for name in wanted}


class StandIn:
    """`torch.ops._C.<kernel>` for shim `shim`: on meta tensors only, where it writes nothing
    (every kernel it stands in for writes into an output its caller made); any other tensor is
    refused, so a result never rests on it."""

    def __init__(self, shim: str, kernel: str, used: set[str]) -> None:
        self.shim, self.kernel, self._used = shim, kernel, used

    def __call__(self, *args, **kwargs) -> None:
        import torch

        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        if not tensors or any(t.device.type != "meta" for t in tensors):
            raise RuntimeError(f"shim {self.shim}: torch.ops._C.{self.kernel} is missing from this vLLM wheel; its "
                               "stand-in takes meta tensors only")
        self._used.add(self.shim)

    def __repr__(self) -> str:
        return f"<shim {self.shim}: torch.ops._C.{self.kernel}>"


class _Namespace:
    """torch.ops._C while kernel shims are in force: the real namespace, but for the kernels
    stood in for (looking one up counts its shim as used: the constructor holds it)."""

    def __init__(self, real, stand_ins: dict[str, StandIn], used: set[str]) -> None:
        self.real, self._stand_ins, self._used = real, stand_ins, used

    def __getattr__(self, name: str):
        stand_in = self._stand_ins.get(name)
        if stand_in is None:
            return getattr(self.real, name)
        self._used.add(stand_in.shim)
        return stand_in


@contextlib.contextmanager
def kernel_shims() -> Iterator[set[str]]:
    """The kernel shims get_model needs here, for the block: yields the set the names of those
    it used are added to (what the row says). torch.ops._C is put back after."""
    used: set[str] = set()
    missing = _missing_kernels()
    if not missing:
        yield used
        return
    import torch

    real = torch.ops._C
    stand_ins = {kernel: StandIn(name, kernel, used) for name, kernels in missing.items() for kernel in kernels}
    torch.ops._C = _Namespace(real, stand_ins, used)
    try:
        yield used
    finally:
        torch.ops._C = real


def needed() -> dict[str, str]:
    """The shims vLLM's own code will need in this process (name -> what it stands in for): the
    run header's (`Engine.shims`); imports vLLM's platform (about 3 s)."""
    target_device()
    names = ([CPU_TARGET] if CPU_TARGET in APPLIED else []) + ([TRITON_CPU] if _needs_triton_cpu() else []) \
        + sorted(_missing_kernels())
    return {name: NAMES[name] for name in names}


# What a row computed under a kernel shim was not given by vLLM's own code
NOT_RUN = {MOE_PREPACK: "the MoE expert weights' CPU packing (process_weights_after_loading)",
           ACTIVATION_OPS: "nothing: the activation kernels' handles were only held"}


def applied(used: set[str] = frozenset()) -> dict:
    """Extras for a row computed in this process: the shims used (this process's config shims
    and the kernel shims of its own get_model, `used`), and what those did not run."""
    names = sorted(APPLIED | set(used))
    extras = {"shims": names} if names else {}
    if used:
        extras["not_run"] = "; ".join(f"{name}: {NOT_RUN[name]}" for name in sorted(used))
    return extras
