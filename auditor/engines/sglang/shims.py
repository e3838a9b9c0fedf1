"""Environment shims: what this machine lacks that SGLang's own construction asks of it, and how
the auditor stands in for it. Each is named in the run header (`NAMES`, through the engine's
record) and on every serves row built under it (extras `shims`).

* `sgl-kernel`: SGLang 0.5.23 pins `sglang-kernel`, a CUDA wheel whose `sgl_kernel/__init__.py`
  loads its `common_ops` library, which needs libcuda: on a machine without a GPU its import
  raises ImportError, and SGLang's layers import it at module level. No CPU build is on the
  index. The stand-in is a package of that name whose every attribute is a function that raises
  if called: importing works, and nothing SGLang's constructor calls runs on it (a call would
  raise, and the row would say so). Installed for the worker's life (SGLang's modules keep what
  they imported), only where the real one does not import.
* `meta-device`: SGLang's `DeviceConfig` refuses "meta", and `TransformersBase._init_parameters`
  (srt/models/transformers.py:669-681) makes every parameter left on meta a real tensor on
  `get_device()`: a large default config would need tens of GB. While a type is built on meta,
  the loader's device is `torch.device("meta")` and `get_device()` of transformers.py answers
  "meta", so parameters stay meta tensors; nothing else of the constructor changes.
* `dummy-weights`: the dummy loader's `initialize_dummy_weights` (srt/model_loader/weight_utils.py)
  makes a `torch.Generator` on each parameter's device, which torch refuses for meta ("META
  device type not an accelerator"): on meta parameters there is nothing to fill, so it is a no-op
  for them. Not run: the random fill.

Where the meta device itself stops SGLang's code, the type's tiny config is built on the CPU with
none of the last two (serving.py).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Iterator

SGL_KERNEL = "sgl-kernel"
META_DEVICE = "meta-device"
DUMMY_WEIGHTS = "dummy-weights"
_PACKAGE = "sgl_kernel"
NAMES = {
    SGL_KERNEL: "sgl_kernel, the CUDA-only sglang-kernel wheel that does not import without libcuda, as a "
                "package whose functions raise if called (none is called while a model is constructed)",
    META_DEVICE: "the dummy loader's device torch.device('meta') and transformers.py's get_device() 'meta' "
                 "(DeviceConfig refuses meta; _init_parameters, transformers.py:669-681, would allocate every "
                 "parameter on the CPU)",
    DUMMY_WEIGHTS: "initialize_dummy_weights a no-op for meta parameters (torch makes no Generator on meta; "
                   "not run: the random fill)",
}
APPLIED: set[str] = set()  # the shims this process has used


class _Kernel:
    """A name of sgl_kernel's: calling it raises; its attributes are names too."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name} is a CUDA kernel of sglang-kernel, which does not import on this machine "
                           "(the auditor's stand-in, shim 'sgl-kernel')")

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Kernel(f"{self._name}.{attr}")


class _StandIn(types.ModuleType):
    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Kernel(f"{self.__name__}.{attr}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, version: str) -> None:
        self.version = version

    def find_spec(self, fullname, path, target=None):
        if fullname == _PACKAGE or fullname.startswith(_PACKAGE + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _StandIn(spec.name)

    def exec_module(self, module) -> None:
        module.__path__ = []
        module.__version__ = self.version


def sgl_kernel() -> bool:
    """sgl_kernel importable: the real one where it imports, else the stand-in, installed for the
    process's life. Returns whether the stand-in is in use."""
    if any(isinstance(finder, _Finder) for finder in sys.meta_path):
        return True
    if importlib.util.find_spec(_PACKAGE) is None:
        return False  # not installed at all: SGLang's own import says what is missing
    try:
        importlib.import_module(_PACKAGE)
        return False
    except ImportError:
        pass
    for name in [n for n in sys.modules if n == _PACKAGE or n.startswith(_PACKAGE + ".")]:
        del sys.modules[name]  # the parts of the real package that imported before it failed
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("sglang-kernel")
    except PackageNotFoundError:
        installed = "0"
    sys.meta_path.insert(0, _Finder(installed))
    APPLIED.add(SGL_KERNEL)
    return True


def in_use() -> dict[str, str]:
    """{name: what it stands in for} of the shims this process uses, for the run header."""
    return {name: NAMES[name] for name in sorted(APPLIED)}


@contextlib.contextmanager
def on_meta() -> Iterator[object]:
    """The `meta-device` and `dummy-weights` shims for the block; yields the device config's
    device to give the loader (`torch.device("meta")`)."""
    import sglang.srt.model_loader.loader as loader
    import sglang.srt.models.transformers as backend
    import torch

    fill = loader.initialize_dummy_weights
    device = backend.get_device

    def initialize_dummy_weights(model, *args, **kwargs):
        if all(p.device.type == "meta" for p in model.parameters()):
            APPLIED.add(DUMMY_WEIGHTS)
            return None
        return fill(model, *args, **kwargs)

    def get_device(*args, **kwargs):
        APPLIED.add(META_DEVICE)
        return "meta"

    loader.initialize_dummy_weights, backend.get_device = initialize_dummy_weights, get_device
    APPLIED.add(META_DEVICE)
    try:
        yield torch.device("meta")
    finally:
        loader.initialize_dummy_weights, backend.get_device = fill, device
