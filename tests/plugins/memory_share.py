"""A model type that needs more memory than a job's share of the machine but less than the machine:
`auditor_share_hog` holds SHARE_HOG_BYTES (2 GiB, every page touched) for a few seconds while it is
built, then builds. Under --max-memory auto with many jobs it is `oom`; rerun alone it builds.

Load with `auditor sweep --plugin tests/plugins/memory_share.py --models auditor_share_hog`.
"""

import time

import torch
from transformers import AutoConfig, AutoModel, PreTrainedConfig, PreTrainedModel

SHARE_HOG_BYTES = 2 * 2**30
HOLD_SECONDS = 3.0  # long enough for the pool's memory poll (every 0.25 s) to see it


class AuditorShareHogConfig(PreTrainedConfig):
    model_type = "auditor_share_hog"


class AuditorShareHogModel(PreTrainedModel):
    config_class = AuditorShareHogConfig

    def __init__(self, config):
        super().__init__(config)
        held = bytearray(SHARE_HOG_BYTES)
        for i in range(0, SHARE_HOG_BYTES, 4096):  # resident, not just reserved
            held[i] = 1
        time.sleep(HOLD_SECONDS)
        del held
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x)


AutoConfig.register("auditor_share_hog", AuditorShareHogConfig)
AutoModel.register(AuditorShareHogConfig, AuditorShareHogModel)
