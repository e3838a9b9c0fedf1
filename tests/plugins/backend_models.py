"""Model types for the backend check's gates that transformers does not offer, registered with
AutoConfig/AutoModel.register. Each type's name says which gate of vLLM's Transformers backend
it fails; tests build them in-process and call the gates directly (a registered type has no
architecture vLLM can resolve, so a sweep stops it at the registry gate)."""

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedConfig, PreTrainedModel
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS


class _Config(PreTrainedConfig):
    num_hidden_layers = 2
    hidden_size = 8
    vocab_size = 16


class Attention(nn.Module):
    """Dispatches through the attention interface, as transformers' own layers do."""

    def __init__(self, config, layer_idx):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.q_proj = nn.Linear(8, 8)

    def forward(self, hidden_states):
        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, None)
        return attention_interface(self, hidden_states, hidden_states, hidden_states, None)


class Layer(nn.Module):
    def __init__(self, config, layer_idx, attentions=1):
        super().__init__()
        self.attentions = nn.ModuleList(Attention(config, layer_idx) for _ in range(attentions))


def _register(model_type, init, extra=None):
    config_cls = type(f"{model_type.title().replace('_', '')}Config", (_Config,), {"model_type": model_type})

    def model_init(self, config):
        PreTrainedModel.__init__(self, config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        init(self, config)
        self.post_init()

    attrs = {"config_class": config_cls, "__init__": model_init, "_supports_attention_backend": True,
             "get_input_embeddings": lambda self: self.embed_tokens,
             "forward": lambda self, input_ids=None: self.embed_tokens(input_ids), **(extra or {})}
    model_cls = type(f"{model_type.title().replace('_', '')}Model", (PreTrainedModel,), attrs)
    AutoConfig.register(model_type, config_cls)
    AutoModel.register(config_cls, model_cls)


def _layers(self, config):
    self.layers = nn.ModuleList(Layer(config, i) for i in range(config.num_hidden_layers))


def _two_lists(self, config):
    _layers(self, config)
    self.extra_layers = nn.ModuleList([nn.Linear(8, 8)])


def _two_attentions(self, config):
    self.layers = nn.ModuleList(Layer(config, i, attentions=2) for i in range(config.num_hidden_layers))


def _no_attention(self, config):
    self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(config.num_hidden_layers))


# Passes every gate after the registry's: the control.
_register("auditor_backend_ok", _layers, {"_tp_plan": {"layers.*.attentions.*.q_proj": "colwise"}})
# backend/pp-plan: "Pipeline parallel of models with multiple `ModuleList`s ..."
_register("auditor_backend_two_lists", _two_lists)
# backend/tp-plan: a style that is not a string
_register("auditor_backend_tuple_style", _layers, {"_tp_plan": {"layers.*.attentions.*.q_proj": ("colwise",)}})
# backend/attention: "Layer 0 dispatches attention from more than one module ..."
_register("auditor_backend_two_attentions", _two_attentions)
# backend/attention: "Layer 0 does not dispatch through the Transformers attention interface ..."
_register("auditor_backend_no_attention", _no_attention)
# backend/tp-plan: recursive_replace asks for the input embeddings first (what transformers' default
# raises where it cannot find them, as for aimv2, which vLLM now stops earlier, at its decorator)
def _no_embeddings(self):
    raise NotImplementedError(f"`get_input_embeddings` not auto-handled for {type(self).__name__}")


_register("auditor_backend_no_embeddings", _layers, {"get_input_embeddings": _no_embeddings})
# backend/pp-plan: "Could not find `ModuleList` ..." (no layer list at all)
_register("auditor_backend_no_list", lambda self, config: setattr(self, "proj", nn.Linear(8, 8)))



# A multimodal config (its text config is a sub-config) whose model names no encoder: under
# compile_mm_encoder vLLM raises "Unable to infer any encoder classes from the model...".
class AuditorNoEncoderConfig(PreTrainedConfig):
    model_type = "auditor_no_encoder"
    sub_configs = {"text_config": _Config}

    def __init__(self, text_config=None, **kwargs):
        self.text_config = text_config if isinstance(text_config, _Config) else _Config(**(text_config or {}))
        super().__init__(**kwargs)


class AuditorNoEncoderModel(PreTrainedModel):
    config_class = AuditorNoEncoderConfig

    def __init__(self, config):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(16, 8)
        self.post_init()

    def get_encoder(self, modality=None):
        return self

    def forward(self, input_ids: torch.Tensor = None, inputs_embeds: torch.Tensor = None,
                position_ids: torch.Tensor = None):
        return self.embed_tokens(input_ids)


AutoConfig.register("auditor_no_encoder", AuditorNoEncoderConfig)
AutoModel.register(AuditorNoEncoderConfig, AuditorNoEncoderModel)
