"""Model types for whose-fault tests that transformers does not offer (registered with
AutoConfig/AutoModel.register): a model that reads a tensor's value at __init__, which the meta
device cannot give (an environment limit of building on meta, never a verdict), and a model whose
pipeline-parallel plan is a list where transformers keeps a dict (the auditor's own vLLM
pp-plan gate code breaks on it: the auditor's fault, never the engine's)."""

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedConfig, PreTrainedModel


class _Config(PreTrainedConfig):
    num_hidden_layers = 2
    hidden_size = 8
    vocab_size = 16


def _register(model_type, init, extra=None, after=None):
    config_cls = type(f"{model_type.title().replace('_', '')}Config", (_Config,), {"model_type": model_type})

    def model_init(self, config):
        PreTrainedModel.__init__(self, config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(config.num_hidden_layers))
        init(self, config)
        self.post_init()
        if after is not None:
            after(self)

    attrs = {"config_class": config_cls, "__init__": model_init,
             "get_input_embeddings": lambda self: self.embed_tokens,
             "forward": lambda self, input_ids=None: self.embed_tokens(input_ids), **(extra or {})}
    model_cls = type(f"{model_type.title().replace('_', '')}Model", (PreTrainedModel,), attrs)
    AutoConfig.register(model_type, config_cls)
    AutoModel.register(config_cls, model_cls)


def _copies_a_tensor(self, config):
    # As model code that fills a table at __init__ does (bloom's native vLLM class copies a
    # tensor there): on the meta device there is no data to copy.
    self.scale = float(torch.ones(1).cpu()[0])


# build: undecided (environment): "Cannot copy out of meta tensor"
_register("auditor_fault_meta_copy", _copies_a_tensor)
# vLLM's pp-plan gate (auditor/engines/vllm/plans.py) reads `_pp_plan.keys()`: a list breaks our code
# (set after post_init, which makes the class's plan a dict)
_register("auditor_fault_list_pp_plan", lambda self, config: None, after=lambda self: setattr(self, "_pp_plan", ["layers"]))
