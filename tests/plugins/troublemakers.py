"""Model types that misbehave on purpose, registered with AutoConfig/AutoModel.register.

Load with `auditor sweep --plugin tests/plugins/troublemakers.py --models 'auditor_.*'`.
Each type's name says what it does while being built.
"""

import ctypes
import os
import subprocess
import sys
import time

import torch
from transformers import AutoConfig, AutoModel, PreTrainedConfig, PreTrainedModel

HOG_BYTES = 2**30


def _make(model_type, build, config_init=None):
    def __init__(self, **kwargs):
        if config_init is not None:
            config_init()
        PreTrainedConfig.__init__(self, **kwargs)

    config_cls = type(f"{model_type.title().replace('_', '')}Config", (PreTrainedConfig,),
                      {"model_type": model_type, "__init__": __init__})

    def model_init(self, config):
        PreTrainedModel.__init__(self, config)
        self.linear = torch.nn.Linear(4, 4)
        build()
        self.post_init()

    model_cls = type(f"{model_type.title().replace('_', '')}Model", (PreTrainedModel,),
                     {"config_class": config_cls, "__init__": model_init,
                      "forward": lambda self, input_ids=None: self.linear(input_ids)})
    AutoConfig.register(model_type, config_cls)
    AutoModel.register(config_cls, model_cls)


def _hang():
    time.sleep(3600)


def _exit():
    os._exit(3)


def _segfault():
    ctypes.string_at(0)


def _missing():
    import auditor_test_package_that_is_not_installed  # noqa: F401


def _hub():
    from huggingface_hub import hf_hub_download

    hf_hub_download("auditor-test/not-a-repo", "config.json")


def _hog():
    global _held
    _held = bytearray(HOG_BYTES)
    for i in range(0, HOG_BYTES, 4096):  # touch every page so it is resident
        _held[i] = 1
    time.sleep(3600)


def _child_hog():
    # The worker stays small; a child it started takes the memory. The pool counts a worker's
    # children with it (its receiver is one), so this is an `oom` too, and the child dies with
    # the worker's process group.
    subprocess.Popen([sys.executable, "-c", f"import time; held = bytearray({HOG_BYTES} + {HOG_BYTES // 2}); "
                      "held[::4096] = bytes(len(held[::4096])); time.sleep(3600)"])
    time.sleep(3600)


def _bad_config():
    raise ValueError("auditor test: this default config cannot be made")


def _fine():
    pass


_make("auditor_fine", _fine)
_make("auditor_hang", _hang)
_make("auditor_exit", _exit)
_make("auditor_segfault", _segfault)
_make("auditor_missing", _missing)
_make("auditor_hub", _fine, config_init=_hub)
_make("auditor_hog", _hog)
_make("auditor_child_hog", _child_hog)
_make("auditor_bad_config", _fine, config_init=_bad_config)
