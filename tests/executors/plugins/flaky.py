"""A model type whose worker process dies the first time it is built, and builds on the retry.

`auditor_exit_once` leaves a marker in $AUDITOR_TEST_MARKERS before it calls os._exit, so the
second attempt (Ray's retry, in a new worker process) finds the marker and builds.
"""

import os
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModel, PreTrainedConfig, PreTrainedModel


class ExitOnceConfig(PreTrainedConfig):
    model_type = "auditor_exit_once"


class ExitOnceModel(PreTrainedModel):
    config_class = ExitOnceConfig

    def __init__(self, config):
        super().__init__(config)
        self.linear = torch.nn.Linear(4, 4)
        marker = Path(os.environ["AUDITOR_TEST_MARKERS"]) / "auditor_exit_once"
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(3)
        self.post_init()

    def forward(self, input_ids=None):
        return self.linear(input_ids)


AutoConfig.register("auditor_exit_once", ExitOnceConfig)
AutoModel.register(ExitOnceConfig, ExitOnceModel)
