"""A model type whose config kills the pickle check's receiver the moment it arrives there.

Load with `auditor sweep --plugin tests/remote/plugins/receiver_killer.py`. Its config is
an ordinary module-level class (it pickles by reference), but unpickling it inside the
receiver process ends that process, as a far side that segfaults would.
"""

import multiprocessing
import os

import torch
from transformers import AutoConfig, AutoModel, PreTrainedConfig, PreTrainedModel


class KillsReceiverConfig(PreTrainedConfig):
    model_type = "auditor_kills_receiver"

    def __setstate__(self, state):
        if multiprocessing.current_process().name == "auditor-receiver":
            os._exit(7)
        self.__dict__.update(state)


class KillsReceiverModel(PreTrainedModel):
    config_class = KillsReceiverConfig

    def __init__(self, config):
        super().__init__(config)
        self.linear = torch.nn.Linear(4, 4)
        self.post_init()

    def forward(self, input_ids=None):
        return self.linear(input_ids)


AutoConfig.register("auditor_kills_receiver", KillsReceiverConfig)
AutoModel.register(KillsReceiverConfig, KillsReceiverModel)
