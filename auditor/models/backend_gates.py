"""The gates of vLLM 0.33.0's Transformers modeling backend, emulated on a built model.

Each function answers one gate as vLLM's own code would, with vLLM's message when it stops
there, and never needs vLLM. File and line references are to vLLM 0.33.0's wheel:
`registry.py` is vllm/model_executor/models/registry.py, `model.py` vllm/config/model.py,
`base.py`, `utils.py`, `multimodal.py`, `mtp.py`, `fusers/attention.py` are under
vllm/model_executor/models/transformers/, `hf_config.py` is vllm/transformers_utils/config.py.
The emulation is for one GPU and no parallelism except where a gate is about it (the
tensor- and pipeline-parallel plans), `model_impl="transformers"` (the user asked for this
backend) and a default `max_model_len` (the config's `max_position_embeddings`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from dataclasses import dataclass, field

# registry.py:784-820: the backend classes vLLM has.
BACKEND_CLASSES = frozenset({
    "TransformersForCausalLM", "TransformersMoEForCausalLM", "TransformersForMTP", "TransformersMoEForMTP",
    "TransformersMultiModalForCausalLM", "TransformersMultiModalMoEForCausalLM",
    "TransformersEmbeddingModel", "TransformersMoEEmbeddingModel", "TransformersMultiModalEmbeddingModel",
    "TransformersForSequenceClassification", "TransformersMoEForSequenceClassification",
    "TransformersMultiModalForSequenceClassification",
})
# model.py:2340-2357, in order: the first suffix an architecture ends with decides.
_SUFFIX_TO_DEFAULTS = (
    ("ForCausalLM", ("generate", "none")), ("ForConditionalGeneration", ("generate", "none")),
    ("ChatModel", ("generate", "none")), ("LMHeadModel", ("generate", "none")),
    ("ForTextEncoding", ("pooling", "embed")), ("EmbeddingModel", ("pooling", "embed")),
    ("ForSequenceClassification", ("pooling", "classify")), ("ForTokenClassification", ("pooling", "classify")),
    ("ForAudioClassification", ("pooling", "classify")), ("ForImageClassification", ("pooling", "classify")),
    ("ForVideoClassification", ("pooling", "classify")), ("ClassificationModel", ("pooling", "classify")),
    ("ForRewardModeling", ("pooling", "embed")), ("RewardModel", ("pooling", "embed")),
    ("Model", ("pooling", "embed")),
)
# hf_config.py:64-69 (CONFIG_FIELD_ALIASES["num_experts"])
_NUM_EXPERTS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")
# The version floors of base.py:835-842 and where they are applied.
VIDEO_FLOOR = "5.18.0"  # multimodal.py:116
MTP_FLOOR = "5.20.0"  # mtp.py:50


@dataclass(frozen=True)
class Verdict:
    """One gate's answer: passed (`ok`), or stopped with vLLM's message."""

    ok: bool
    message: str = ""
    extras: dict = field(default_factory=dict)



def _getattr_iter(obj, names, default=None):
    """vllm/config/utils.py:132-160 (without its warning)."""
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


# -- the registry gate ---------------------------------------------------------------------------

def architecture(config, model_type: str) -> str | None:
    """The architecture vLLM reads: the config's own, or, for a config without one (a default
    config), the AutoModel class name transformers maps its type to (hf_config.py:939-949)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    archs = getattr(config, "architectures", None)
    if archs:
        return archs[0]
    return MODEL_MAPPING_NAMES.get(getattr(config, "model_type", model_type))


def backend_class(config, arch: str) -> str:
    """ModelConfig._get_transformers_backend_cls (model.py:1129-1157) with runner "auto"."""
    cls = "Transformers"
    cls += "MultiModal" if is_multimodal(config) else ""
    cls += "MoE" if num_experts(config) > 0 else ""
    runner = task = None
    for suffix, defaults in _SUFFIX_TO_DEFAULTS:
        if arch.endswith(suffix):
            runner, task = defaults
            break
    if runner == "pooling" and task in {"embed", "classify"}:
        cls += "EmbeddingModel" if task == "embed" else "ForSequenceClassification"
    else:
        cls += "ForCausalLM"
    return cls


def is_multimodal(config) -> bool:
    """`hf_config is not hf_text_config` (model.py:1134, hf_config.py:1258-1272)."""
    return config.get_text_config() is not config


def num_experts(config) -> int:
    """ModelArchConfigConvertor.get_num_experts (model_arch_config_convertor.py:159-190)."""
    text = config.get_text_config()
    n = _getattr_iter(text, _NUM_EXPERTS, 0)
    if isinstance(n, list):
        return n[0]
    if not n:
        n = 0
        for block in getattr(text, "block_configs", None) or ():
            get = block.get if isinstance(block, dict) else functools.partial(getattr, block)
            if get("block_type", "") == "moe":
                n = max(n, get("n_routed_experts", 0))
    return n or 0


def registry_gate(config, model_type: str, model_cls: type | None = None) -> Verdict:
    """registry.py:1285-1353 (`_try_resolve_transformers`, model_impl="transformers"), then
    whether the backend class it names exists (registry.py:1354-1361, 1418). `model_cls`: the
    class `auto_map`'s AutoModel entry loads, for remote code. What the config raises while
    vLLM reads it (a heterogeneous config's per-layer attribute) stops vLLM there too."""
    from auditor.core.status import message_of

    try:
        return _registry_gate(config, model_type, model_cls)
    except Exception as exc:
        return Verdict(False, message_of(exc))


def _registry_gate(config, model_type: str, model_cls: type | None) -> Verdict:
    import transformers

    arch = architecture(config, model_type)
    if not arch:
        # registry.py:1347-1348 (resolve_model_cls / inspect_model_cls with no architecture)
        return Verdict(False, "ValueError: No model architectures are specified")
    extras: dict = {"architecture": arch}
    text = config.get_text_config()
    if text is not config and not hasattr(text, "num_attention_heads"):
        return Verdict(False, "ValueError: The text_config extracted from the model config does not have "
                              "`num_attention_heads` attribute. This indicates a mismatch between the model config "
                              "and vLLM's expectations. Please ensure that the model config is compatible with vLLM.",
                       extras)
    module = getattr(transformers, arch, None)
    if module is None:
        module = model_cls if "AutoModel" in " ".join(getattr(config, "auto_map", None) or {}) else None
    if module is None:
        return Verdict(False, f"ValueError: Cannot find model module. {arch!r} is not a registered model in the "
                              "Transformers library (only relevant if the model is meant to be in Transformers) and "
                              "'AutoModel' is not present in the model config's 'auto_map' (relevant if the model is "
                              "custom).", extras)
    if not (isinstance(module, type) and issubclass(module, transformers.PreTrainedModel)):
        return Verdict(False, "AssertionError", extras)  # registry.py:1325
    extras["model_class"] = module.__name__
    if not (module.is_backend_compatible() or module._can_set_attn_implementation()):
        return Verdict(False, f"ValueError: The Transformers implementation of {arch!r} is not compatible with vLLM.",
                       extras)
    name = backend_class(config, arch)
    extras.update(backend_class=name, backend_class_exists=name in BACKEND_CLASSES)
    if name not in BACKEND_CLASSES:
        # _try_inspect_model_cls finds no such class; with model_impl="transformers" nothing else
        # serves it through this backend (registry.py:1354-1361, then 1418).
        return Verdict(False, f"ValueError: Model architectures [{arch!r}] are not supported for now "
                              f"(vLLM has no Transformers backend class {name})", extras)
    return Verdict(True, name, extras)


# -- enable_if -----------------------------------------------------------------------------------

def enable_if_gate(config) -> Verdict:
    """`can_enable_torch_compile` (utils.py:373-386), which the decorated decoder's `__init__`
    calls after the original one even with compilation off (decorators.py:403-408): a rope
    parameters dict without "rope_type" raises KeyError there."""
    text = config.get_text_config()
    try:
        rope_types = {rp["rope_type"] for rp in _iter_rope_parameters(text)}
    except KeyError as exc:
        return Verdict(False, f"KeyError: {exc}")
    if "dynamic" not in rope_types:
        return Verdict(True, "compile enabled", {"compile_enabled": True})
    # dynamic_rope_update_is_noop (utils.py:360-370) with max_model_len = max_position_embeddings
    noop = getattr(text, "max_position_embeddings", None) is not None
    enabled = "longrope" not in rope_types and noop
    return Verdict(True, "compile enabled" if enabled else "compile disabled (dynamic rope)",
                   {"compile_enabled": enabled})


def _iter_rope_parameters(config):
    """hf_config.py:690-699 with is_rope_parameters_nested (hf_config.py:222-230)."""
    from transformers.configuration_utils import ALLOWED_LAYER_TYPES

    rope = getattr(config, "rope_parameters", None)
    if not isinstance(rope, dict):
        return
    if rope and set(rope.keys()).issubset({*ALLOWED_LAYER_TYPES, "main", "compress"}):
        yield from (p for p in rope.values() if isinstance(p, dict) and p)
    elif rope:
        yield rope


# -- the parallel plans --------------------------------------------------------------------------

def pp_plan_gate(model) -> Verdict:
    """Base.pipeline_parallel (base.py:386-425) as it runs with more than one pipeline stage."""
    from operator import attrgetter

    import torch.nn as nn

    if model.supports_pp_plan:
        module, names, source = model, list(model._pp_plan.keys()), "pp plan"
    else:
        module = model.get_decoder()
        names = [n for n, c in module.named_children() if next(c.parameters(), None) is not None]
        source = "inferred"
    lists = [name for name in names if isinstance(attrgetter(name)(module), nn.ModuleList)]
    extras = {"plan": source, "module_lists": lists}
    if len(lists) > 1:
        return Verdict(False, "ValueError: Pipeline parallel of models with multiple `ModuleList`s in the base "
                              "model are not supported yet!", extras)
    if not lists:
        return Verdict(False, f"ValueError: Could not find `ModuleList` in {type(module)}", extras)
    return Verdict(True, f"{source}: {lists[0]}", extras)


def vocab_embeddings(model, config) -> set[int]:
    """Base._vocab_embeddings (base.py:453-476), as ids. May raise as it does in vLLM: a model
    whose `get_input_embeddings` is not implemented stops recursive_replace there."""
    import torch.nn as nn

    sizes = _vocab_sizes(config)
    embeddings = {id(m) for m in model.get_input_embeddings().modules() if isinstance(m, nn.Embedding)}
    embeddings |= {id(m) for m in model.modules() if isinstance(m, nn.Embedding) and m.num_embeddings in sizes}
    return embeddings


def _walk(model, embeddings: set[int]):
    """The modules Base.recursive_replace visits (base.py:539-597), with their qualified names:
    it replaces linear, conv, vocab-embedding and layer-norm modules without looking inside."""
    import torch.nn as nn

    def visit(module, prefix):
        for name, child in module.named_children():
            qual = f"{prefix}.{name}"
            replaced = isinstance(child, (nn.Linear, nn.Conv2d, nn.Conv3d, nn.LayerNorm)) or id(child) in embeddings
            yield qual, child
            if not replaced:
                yield from visit(child, qual)

    yield from visit(model, "model")


def _vocab_sizes(config) -> set[int]:
    """Base._vocab_embeddings' sizes (base.py:456-463)."""
    from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

    sizes: set[int] = set()
    for key, value in vars(config).items():
        if isinstance(value, PreTrainedConfig):
            sizes |= _vocab_sizes(value)
        elif "vocab_size" in key and isinstance(value, int):
            sizes.add(value)
    return sizes


def tp_plan_gate(model) -> Verdict:
    """The tensor parallel plan as recursive_replace uses it (base.py:375-377, 491-573): each
    linear module's style is the first matching pattern's; a style that is not a string raises in
    replace_linear_class (utils.py:128-129) whatever the parallel size; no plan only warns."""
    import regex as re
    import torch.nn as nn

    from auditor.core.status import message_of

    plan = {f"model.{k}" if k else "model": v for k, v in (model.tp_plan or {}).items()}
    try:
        embeddings = vocab_embeddings(model, model.config)  # base.py:511, before any module is replaced
    except Exception as exc:
        return Verdict(False, message_of(exc), {"where": "Base._vocab_embeddings"})
    if all(isinstance(style, str) for style in plan.values()):
        # Every style a linear module can get is a string (or "replicate"): nothing raises,
        # and no module need be matched against the patterns.
        return _tp_pass(plan)
    for qual, child in _walk(model, embeddings):
        if isinstance(child, nn.Linear):
            pattern = next((p for p in plan if re.match(p, qual)), None)
            style = plan.get(pattern, "replicate")
            if not isinstance(style, str):
                return Verdict(False, f"ValueError: Unsupported parallel style type {type(style)}, expected str",
                               {"module": qual})
    return _tp_pass(plan)


def _tp_pass(plan: dict) -> Verdict:
    if not plan:
        return Verdict(True, "no tensor parallel plan: vLLM warns and shards what fuses", {"entries": 0})
    return Verdict(True, f"{len(plan)} entries", {"entries": len(plan)})


# -- attention dispatch ----------------------------------------------------------------------------

def _is_interface_lookup(node) -> bool:
    """fusers/attention.py:27-36."""
    if isinstance(node, ast.Call):
        node = node.func
    if not isinstance(node, (ast.Attribute, ast.Subscript)):
        return False
    return isinstance(node.value, ast.Name) and node.value.id == "ALL_ATTENTION_FUNCTIONS"


def _names(code) -> set[str]:
    names = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars) | set(code.co_cellvars)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names(const)
    return names


@functools.cache
def dispatches(forward) -> bool:
    """`interface_call(forward) is not None` (fusers/attention.py:39-65): `forward` makes exactly
    one call through a name it read from ALL_ATTENTION_FUNCTIONS.

    The source is parsed only when the compiled code (nested functions included) names
    ALL_ATTENTION_FUNCTIONS at all: the Name node vLLM looks for compiles to one of those names."""
    code = getattr(inspect.unwrap(forward), "__code__", None)
    if code is not None and "ALL_ATTENTION_FUNCTIONS" not in _names(code):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(forward))))
    except (AttributeError, OSError, SyntaxError, TypeError):
        return False
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_interface_lookup(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names]
    return len(calls) == 1


def attention_gate(model, vllm_config) -> Verdict:
    """Every decoder layer 0..num_hidden_layers-1 has exactly one module that dispatches through
    the attention interface with vLLM's implementation and an int `layer_idx` (AttentionFuser:
    fusers/attention.py:97-136; registered in base.py:515-530; required in base.py:628-640).
    `vllm_config`: the model's config with its text config's implementation set to "vllm"."""
    from auditor.models.vllm_build import VLLM_ATTN_IMPL, VLLM_MLA_ATTN_IMPL

    def dispatching():
        for qual, child in _walk(model, vocab_embeddings(model, vllm_config)):
            if not dispatches(type(child).forward):
                continue
            if getattr(getattr(child, "config", None), "_attn_implementation", None) not in (VLLM_ATTN_IMPL,
                                                                                         VLLM_MLA_ATTN_IMPL):
                continue
            index = getattr(child, "layer_idx", None)
            if isinstance(index, int):
                yield qual, index

    return layers_verdict(dispatching(), vllm_config)


def layers_verdict(dispatching, vllm_config) -> Verdict:
    """vLLM's rule on the modules that dispatch attention, `(qualified name, layer index)` pairs
    however they were found (the emulation's walk, or vLLM's own AttentionFuser): one module per
    layer 0..num_hidden_layers-1 (base.py:628-640)."""
    found: dict[int, str] = {}
    for qual, index in dispatching:
        if index in found:
            return Verdict(False, f"ValueError: Layer {index} dispatches attention from more than one module "
                                  f"({found[index]} and {qual}), which one vLLM attention layer cannot serve.",
                           {"layer": index})
        found[index] = qual
    text = vllm_config.get_text_config()
    layer_types = getattr(text, "layer_types", None)
    n_layers = getattr(text, "num_hidden_layers", 0) or 0
    for i in range(n_layers):
        if i not in found:
            layer = f"{i} ({layer_types[i]})" if layer_types and i < len(layer_types) else str(i)
            return Verdict(False, f"ValueError: Layer {layer} does not dispatch through the Transformers attention "
                                  "interface and vLLM has no other way to handle it.",
                           {"layer": i, "layers_dispatching": len(found)})
    return Verdict(True, f"{n_layers} layers dispatch", {"layers_dispatching": len(found)})


# -- version floors ------------------------------------------------------------------------------

def version_gate(feature: str, floor: str, installed: str) -> Verdict:
    """Base.check_version (base.py:835-842)."""
    from packaging.version import Version

    if Version(installed) < Version(floor):
        return Verdict(False, f"ImportError: Transformers modeling backend requires transformers>={Version(floor)} "
                              f"for {feature}, but got {Version(installed)}")
    return Verdict(True, f"transformers {installed} >= {floor}")


def has_video_processor(model_type: str) -> bool:
    """Whether vLLM's processing info would see a video processor (multimodal.py:111-116)."""
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    return model_type in VIDEO_PROCESSOR_MAPPING_NAMES


def has_mtp(config) -> bool:
    """A config that sets `num_mtp_layers` can serve as an MTP draft (mtp.py:30-50)."""
    return bool(getattr(config.get_text_config(), "num_mtp_layers", None))
