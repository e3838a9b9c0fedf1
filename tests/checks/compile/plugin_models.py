"""Small model types that compile well, or fail to in one particular way, on purpose.

Load with `auditor sweep --plugin tests/checks/compile/plugin_models.py --models 'auditor_compile_.*'
--checks compile --device cpu --backend eager`. Each type is a tiny decoder (an embedding and a few
linear layers) whose forward takes what vLLM's Transformers backend passes a decoder; the name
says how it behaves under the compile decorator:

* auditor_compile_ok: one graph for every length;
* auditor_compile_break: calls `torch._dynamo.graph_break()`, so fullgraph fails;
* auditor_compile_break_twice: breaks at auditor_compile_break's line, then again in a helper module
  (plugin_helpers.py), so that breaks are listed across files and grouped across types;
* auditor_compile_counter: counts its calls in a Python attribute, so dynamo guards on the count
  and the second length needs another graph;
* auditor_compile_specialize: branches on the sequence length, specializing the dim marked dynamic;
  without guards (vLLM) the graph of length 7 silently computes the short branch at length 13;
* auditor_compile_crash: a short-prompt branch that slices a fixed-size tensor to the length:
  without guards (vLLM) the graph of length 7 crashes at length 13;
* auditor_compile_mismatch: computes something else when compiled;
* auditor_compile_eager_error: its forward fails with or without compiling;
* auditor_compile_no_ids: its forward takes no token ids, so there is nothing to feed.
"""

import importlib.util
import sys
from pathlib import Path

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedConfig, PreTrainedModel


class AuditorCompileConfig(PreTrainedConfig):
    model_type = "auditor_compile_ok"
    vocab_size: int = 50000  # large on purpose: the shrinker takes it to 1024
    hidden_size: int = 512
    num_hidden_layers: int = 6


class AuditorCompileModel(PreTrainedModel):
    config_class = AuditorCompileConfig
    main_input_name = "input_ids"

    def __init__(self, config):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(nn.Linear(config.hidden_size, config.hidden_size)
                                    for _ in range(config.num_hidden_layers))
        self.post_init()

    def forward(self, input_ids=None, inputs_embeds=None, position_ids=None, use_cache=None):
        hidden = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        for layer in self.layers:
            hidden = torch.tanh(layer(hidden))
        return (self.finish(hidden),)

    def finish(self, hidden):
        return hidden


class _Break(AuditorCompileModel):
    def finish(self, hidden):
        torch._dynamo.graph_break()
        return hidden


class _BreakTwice(_Break):
    def finish(self, hidden):
        return _helpers.break_again(super().finish(hidden))


class _Counter(AuditorCompileModel):
    def finish(self, hidden):
        self.calls = getattr(self, "calls", 0) + 1
        return hidden * self.calls


class _Specialize(AuditorCompileModel):
    def finish(self, hidden):
        if hidden.shape[1] > 8:  # a Python branch on the marked length
            return hidden * 2
        return hidden


class _Crash(AuditorCompileModel):
    def finish(self, hidden):
        if hidden.shape[1] <= 8:  # a cheaper path for short prompts, guarded on the marked length
            return hidden + torch.zeros(1, 8, 1)[:, :hidden.shape[1]]
        return hidden


class _Mismatch(AuditorCompileModel):
    def finish(self, hidden):
        return hidden + 1 if torch.compiler.is_compiling() else hidden


class _EagerError(AuditorCompileModel):
    def finish(self, hidden):
        return hidden @ torch.ones(hidden.shape[-1] + 1, 2)  # the shapes do not fit


class _NoIds(AuditorCompileModel):
    main_input_name = "pixel_values"

    def forward(self, pixel_values=None, input_ids=None, inputs_embeds=None, position_ids=None):
        return (self.layers[0](pixel_values),)


def _load_helpers():
    """plugin_helpers.py, by its path: a plugin file is loaded by path, with no package around it.
    It goes into sys.modules, as a plugin does: dynamo runs the functions of a module it cannot
    find there eagerly, without a word, so a break in them would never be seen."""
    name = "auditor_compile_plugin_helpers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("plugin_helpers.py"))
        module = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


_helpers = _load_helpers()


def _register(model_type: str, model_cls: type) -> None:
    title = "".join(part.title() for part in model_type.split("_"))
    config_cls = type(f"{title}Config", (AuditorCompileConfig,), {"model_type": model_type})
    cls = type(f"{title}Model", (model_cls,), {"config_class": config_cls})
    AutoConfig.register(model_type, config_cls)
    AutoModel.register(config_cls, cls)


AutoConfig.register("auditor_compile_ok", AuditorCompileConfig)
AutoModel.register(AuditorCompileConfig, AuditorCompileModel)
for _name, _cls in {"break": _Break, "break_twice": _BreakTwice, "counter": _Counter, "specialize": _Specialize,
                    "crash": _Crash,
                    "mismatch": _Mismatch, "eager_error": _EagerError, "no_ids": _NoIds}.items():
    _register(f"auditor_compile_{_name}", _cls)
