"""Model types whose builds fail on purpose in a way the machine could have caused (`oom`).

Load with `auditor sweep --plugin tests/plugins/flaky_models.py --models 'auditor_flaky_.*'
--checks build`, with AUDITOR_TEST_COUNTERS set to a directory:

* auditor_flaky_flip: counts its builds in a file of that directory and fails every other one,
  the first included (build 0 fails, 1 builds, 2 fails, ...): a rerun passes, and successive
  sweeps flip between failing and passing;
* auditor_flaky_always: fails every build;
* auditor_flaky_fine: always builds.

The failure is a MemoryError raised in the constructor: an `oom` row, without killing the worker.
"""

import os
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModel, PreTrainedConfig, PreTrainedModel


def _flip(model_type: str) -> bool:
    """Whether this build fails: the count of earlier builds, kept in a file, is even."""
    counter = Path(os.environ["AUDITOR_TEST_COUNTERS"]) / model_type
    count = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(count + 1))
    return count % 2 == 0


_FAILS = {"auditor_flaky_flip": _flip, "auditor_flaky_always": lambda _: True, "auditor_flaky_fine": lambda _: False}


def _make(model_type: str) -> None:
    config_cls = type(f"{model_type.title().replace('_', '')}Config", (PreTrainedConfig,), {"model_type": model_type})

    def __init__(self, config):
        PreTrainedModel.__init__(self, config)
        self.linear = torch.nn.Linear(4, 4)
        if _FAILS[model_type](model_type):
            raise MemoryError(f"auditor test: {model_type} ran short of memory on purpose")
        self.post_init()

    model_cls = type(f"{model_type.title().replace('_', '')}Model", (PreTrainedModel,),
                     {"config_class": config_cls, "__init__": __init__,
                      "forward": lambda self, input_ids=None: self.linear(input_ids)})
    AutoConfig.register(model_type, config_cls)
    AutoModel.register(config_cls, model_cls)


for _name in _FAILS:
    _make(_name)
