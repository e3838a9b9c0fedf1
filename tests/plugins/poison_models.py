"""Model types that break their process's device, as a device-side assert breaks a CUDA context.

On CUDA, a device-side assert (an index out of range in a kernel, inductor's bounds check) leaves
the process's context unusable: every later kernel of that process fails with the same
`torch.AcceleratorError`. This machine has no GPU, so these types do to their worker what such an
error does there, with the same exception: from the moment they break it, every module's forward in
the process raises `AcceleratorError: CUDA error: device-side assert triggered` (a global forward
pre-hook), whatever model it belongs to. Both are llama underneath, so every check can build and
feed them.

- auditor_poisoner: its forward raises the error (the culprit's own row carries it), as a
  synchronous device error does.
- auditor_poisoner_latent: its forward returns, and the process is broken from then on for every
  module but its own, as an asynchronous error that surfaces only at the next synchronization: its
  own rows pass, the next type's first forward would fail (and so does the worker's probe).

Load with `auditor sweep --plugin tests/plugins/poison_models.py`.
"""

import functools

import torch
from torch.nn.modules.module import register_module_forward_pre_hook
from transformers import AutoConfig, AutoModel, LlamaConfig, LlamaModel

MESSAGE = "CUDA error: device-side assert triggered"


_OWN = {"forward": 0}  # > 0 while auditor_poisoner_latent's own forward runs: its layers still work


def _broken(module, args):
    # A compiled graph's module runs the latent type's own compiled forward, outside that forward's frame.
    if not _OWN["forward"] and not isinstance(module, torch.fx.GraphModule):
        raise torch.AcceleratorError(MESSAGE)


def _break_the_process() -> None:
    if not getattr(_break_the_process, "done", False):
        register_module_forward_pre_hook(_broken)
        _break_the_process.done = True


def _register(model_type: str, raises: bool) -> None:
    config_cls = type(f"{model_type.title().replace('_', '')}Config", (LlamaConfig,), {"model_type": model_type})

    @functools.wraps(LlamaModel.forward)  # its signature: the compile decorator reads the forward's parameters
    def forward(self, *args, **kwargs):
        _OWN["forward"] += 0 if raises else 1
        try:
            output = LlamaModel.forward(self, *args, **kwargs)
        finally:
            _OWN["forward"] -= 0 if raises else 1
        _break_the_process()
        if raises:
            raise torch.AcceleratorError(MESSAGE)
        return output

    model_cls = type(f"{model_type.title().replace('_', '')}Model", (LlamaModel,),
                     {"config_class": config_cls, "forward": forward})
    AutoConfig.register(model_type, config_cls)
    AutoModel.register(config_cls, model_cls)


_register("auditor_poisoner", raises=True)
_register("auditor_poisoner_latent", raises=False)
