"""SGLang 0.5.23's Transformers fallback walking the built model, emulated: the pipeline split
(`pp-plan`), the tensor-parallel plan with its RMSNorm and MoE replacements (`tp-plan`), the
attention instances it makes per layer (`attention`) and the vocab embedding it swaps in
(`vocab-embed`), in the order TransformersBase.__init__ runs them (transformers.py:646-653).

Each reads what SGLang's code reads, with the same Python expressions where SGLang's failure is
an expression's own exception (an attribute the config lacks, `hidden_size // num_heads`), so
that the message is SGLang's. What needs SGLang's parallel runtime (its linear, norm, MoE and
embedding layers, which allocate weights on the device) is not built: the rules that decide
whether SGLang raises before building them are emulated. References as in gates.py.
"""

from __future__ import annotations

import re

from auditor.core.fault import EngineRefusal
from auditor.engines.interface import Verdict, cited, engine_line, transcribed
from auditor.engines.sglang.releases import RELEASE

_TP_STYLES = frozenset({"colwise", "colwise_rep", "rowwise", "rowwise_rep", "replicate"})
# transformers.py:230-245
_TP_ALIASES = {
    "colwiseparallel": "colwise", "packed_colwise": "colwise", "local_colwise": "colwise",
    "rowwiseparallel": "rowwise", "packed_rowwise": "rowwise", "local_rowwise": "rowwise",
    "local_packed_rowwise": "rowwise", "embedding_rowwise": "replicate", "isolated": "replicate",
    "local": "replicate", "replicated_with_grad_allreduce": "replicate", "moe_tp_experts": "replicate",
}
_LANGUAGE_MODEL_CHILD_NAMES = frozenset({"language_model", "text_model", "model", "lm"})  # transformers.py:700


@transcribed(RELEASE, "_getattr_first")
def _getattr_first(obj, names, default=None):
    """SGLang's _getattr_first."""
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return default


# -- pipeline parallel ---------------------------------------------------------------------------

def pp_plan_gate(model, text) -> Verdict:
    """TransformersBase.pipeline_parallel (transformers.py:804-901) with two stages: the plan from
    the model or its configs, then exactly one of its entries a ModuleList."""
    import torch.nn as nn

    plan = (getattr(model, "_pp_plan", None) or getattr(model, "pp_plan", None)
            or getattr(model.config, "base_model_pp_plan", None) or getattr(text, "base_model_pp_plan", None) or {})
    if not plan:
        return Verdict(False, f"ValueError: {type(model)} does not support pipeline parallel yet!")
    lists = []
    for name in (re.sub(r"^model\.", "", key) for key in plan):
        try:
            module = model.get_submodule(name)
        except AttributeError:
            module = None
        if isinstance(module, nn.ModuleList):
            if lists:
                return Verdict(False, "ValueError: Pipeline parallel with multiple ModuleList blocks is not supported.",
                               {"module_lists": [*lists, name]})
            lists.append(name)
    if not lists:
        return Verdict(False, f"ValueError: Could not find ModuleList in {type(model)}.")
    return Verdict(True, f"pp plan: {lists[0]}", {"module_lists": lists})


# -- tensor parallel -----------------------------------------------------------------------------

@transcribed(RELEASE, "_get_model_tp_plan")
def tp_plan(model, text) -> dict:
    """_get_model_tp_plan and _infer_tp_plan_from_children."""
    plan = (getattr(model, "tp_plan", None) or getattr(model, "_tp_plan", None)
            or getattr(model.config, "base_model_tp_plan", None) or getattr(text, "base_model_tp_plan", None))
    if plan:
        return plan
    plan = {}
    for child_name, child in model.named_children():
        child_plan = getattr(child, "_tp_plan", None)
        if child_plan:
            plan.update({f"{child_name}.{k}": v for k, v in child_plan.items()})
            continue
        child_config = getattr(child, "config", None)
        child_tp = getattr(child_config, "base_model_tp_plan", None) if child_config is not None else None
        if child_tp:
            plan.update({f"{child_name}.{k}": v for k, v in child_tp.items()})
            continue
        if child_name not in _LANGUAGE_MODEL_CHILD_NAMES or child_config is None:
            continue
        model_type = getattr(child_config, "model_type", "")
        base_type = model_type.replace("_vl_text", "").replace("_vl", "").replace("_text", "")
        if base_type and base_type != model_type:
            try:
                from transformers import AutoConfig

                base_tp = getattr(AutoConfig.for_model(base_type), "base_model_tp_plan", None)
                if base_tp:
                    plan.update({f"{child_name}.{k}": v for k, v in base_tp.items()})
            except Exception:  # noqa: S112  (SGLang logs it and goes on)
                continue
    return plan


@transcribed(RELEASE, "_normalize_tp_style")
def normalize_style(style) -> str:
    """_normalize_tp_style, raising what SGLang raises."""
    style = style.lower().replace("-", "_")
    style = _TP_ALIASES.get(style, style)
    if style not in _TP_STYLES:
        raise EngineRefusal(f"ValueError: Unsupported TP style '{style}' for Transformers backend.")
    return style


@transcribed(RELEASE, "_normalize_tp_plan")
def normalized_plan(plan: dict, normalize=normalize_style) -> dict:
    """_normalize_tp_plan."""
    normalized = {}
    for pattern, style in plan.items():
        if pattern.startswith("^model\\."):
            pattern = "^" + pattern[len("^model\\."):]
        elif pattern.startswith("model\\."):
            pattern = pattern[len("model\\."):]
        elif pattern.startswith("model."):
            pattern = pattern[len("model."):]
        normalized[pattern] = normalize(style)
    return normalized


def moe_replace(model, config, text) -> int:
    """MoEMixin.recursive_replace up to building its fused layers (transformers.py:1193-1304): its
    asserts on the config, the expressions it evaluates, and the `experts` modules it replaces
    (a ModuleList, or a module whose parameters are all 3-D). Returns how many it replaces."""
    num_experts = _getattr_first(text, ("num_local_experts", "num_experts", "n_routed_experts"))
    _asserted(num_experts is not None, "Cannot determine num_experts from config.")
    top_k = _getattr_first(text, ("num_experts_per_tok", "top_k"))
    _asserted(top_k is not None, "Cannot determine top_k from config.")
    text.hidden_size  # noqa: B018  (read at transformers.py:1207)
    _asserted(_getattr_first(text, ("moe_intermediate_size", "intermediate_size")) is not None,
              "Cannot determine intermediate_size.")
    getattr(text, "norm_topk_prob", top_k > 1)  # transformers.py:1221: the default is evaluated
    config.architectures[0].lower()  # transformers.py:1225
    list(range(num_experts))  # FusedMoE.make_expert_params_mapping iterates range(num_experts)
    found = 0
    stack = [model]
    while stack:
        module = stack.pop()
        for name, child in module.named_children():
            # SGLang lists every child's parameters; only an `experts` child's decide anything
            if name == "experts" and _replaced_experts(child):
                found += 1  # replaced by TransformersFusedMoE: nothing under it is walked again
            else:
                stack.append(child)
    return found


def tp_plan_gate(model, config, text, moe: bool, normalize=normalize_style) -> Verdict:
    """recursive_replace (transformers.py:760-801), after MoEMixin's for a MoE backend class:
    the plan's styles normalized (an unknown style raises at any parallel size), then every
    linear matched against the plan's patterns and every `*RMSNorm` replaced, which reads the
    text config's `hidden_size` and the norm's weight size. `normalize`: the style rule
    (SGLang's own in the own-code variant)."""
    import torch.nn as nn

    experts = moe_replace(model, config, text) if moe else 0
    # maybe_prefix("model", k) (transformers.py:99-100, 770): "model." + k, even for an empty k
    plan = {f"model.{k}": v for k, v in normalized_plan(tp_plan(model, text), normalize).items()}
    # After normalizing, every style is one SGLang builds: matching a linear can only raise on a
    # pattern `re` cannot compile. Where every pattern compiles, no linear need be matched.
    match = not all(_compiles(p) for p in plan)
    linears = norms = 0
    stack = [("model", model)]
    while stack:
        prefix, module = stack.pop()
        for name, child in module.named_children():
            qual = f"{prefix}.{name}"
            if moe and name == "experts" and _replaced_experts(child):
                continue
            if isinstance(child, nn.Linear):
                if match:
                    next((p for p in plan if re.match(p, qual)), None)
                linears += 1
            elif type(child).__name__.endswith("RMSNorm"):
                replace_rms_norm(child, text.hidden_size)
                norms += 1
            else:
                stack.append((qual, child))
    extras = {"entries": len(plan), "linears": linears, "rms_norms": norms, "moe_layers": experts}
    return Verdict(True, f"{len(plan)} plan entries" if plan else "no tensor parallel plan", extras)


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _replaced_experts(child) -> bool:
    import torch.nn as nn

    params = list(child.parameters())
    return isinstance(child, nn.ModuleList) or bool(params and all(p.ndim == 3 for p in params))


@transcribed(RELEASE, "replace_rms_norm_class")
def replace_rms_norm(norm, hidden_size: int) -> None:
    """What replace_rms_norm_class reads before building SGLang's norm:
    its eps and its weight's size (a 0-d weight raises there)."""
    _getattr_first(norm, ("eps", "variance_epsilon"), 1e-6)
    weight = getattr(norm, "weight", None)
    if weight is not None:
        weight.size(0)


# -- attention instances -------------------------------------------------------------------------

def attention_gate(model, config, text, layers: int) -> Verdict:
    """_create_attention_instances (transformers.py:904-955): heads, kv heads, width and head dim
    from the text config (`hidden_size // num_heads` is evaluated as getattr's default whatever
    the config has), `divide` asserting divisibility by the tensor-parallel size, `head_dim**-0.5`
    per layer; an encoder (any module with `is_causal` false, the text config being the config)
    gets cross attention, and `sliding_attention` layers the config's window."""
    with engine_line(RELEASE.engine, cited(RELEASE, "num_attention_heads")):
        num_heads = text.num_attention_heads
    with engine_line(RELEASE.engine, cited(RELEASE, "num_key_value_heads")):
        num_kv_heads = getattr(text, "num_key_value_heads", num_heads)
    with engine_line(RELEASE.engine, cited(RELEASE, "hidden_size")):
        hidden_size = text.hidden_size
    with engine_line(RELEASE.engine, cited(RELEASE, "head_dim")):
        head_dim = getattr(text, "head_dim", hidden_size // num_heads)
    with engine_line(RELEASE.engine, cited(RELEASE, "layer_types")):
        layer_types = getattr(text, "layer_types", None) or getattr(config, "layer_types", None)
    with engine_line(RELEASE.engine, cited(RELEASE, "sliding_window")):
        window = getattr(text, "sliding_window", None) or getattr(config, "sliding_window", None)
    encoder = any(not getattr(m, "is_causal", True) for m in model.modules() if hasattr(m, "is_causal"))
    if encoder and config != text:
        encoder = False
    sliding = 0
    for idx in range(0, layers):
        if layer_types is not None and idx < len(layer_types) and layer_types[idx] == "sliding_attention" \
                and window is not None:
            sliding += 1
        with engine_line(RELEASE.engine, cited(RELEASE, "attention per layer")):
            _divide(num_heads, 1), head_dim**-0.5, _divide(num_kv_heads, 1)
    extras = {"layers": layers, "head_dim": head_dim if isinstance(head_dim, int) else repr(head_dim),
              "cross_attention": encoder, "sliding_layers": sliding}
    return Verdict(True, f"{layers} attention instances" + (" (cross attention)" if encoder else ""), extras)


@transcribed(RELEASE, "divide")
def _divide(numerator, denominator):
    """SGLang's divide."""
    divisible = numerator % denominator == 0  # a missing count (None): SGLang's TypeError
    _asserted(divisible, f"{numerator} is not divisible by {denominator}")
    return numerator // denominator


def _asserted(condition: bool, message: str = "") -> None:
    """SGLang's `assert condition, message`, refusing as SGLang would."""
    if not condition:
        raise EngineRefusal(f"AssertionError: {message}" if message else "AssertionError")


# -- vocab embedding -----------------------------------------------------------------------------

def vocab_embed_gate(model, text, vocab_size) -> Verdict:
    """replace_vocab_embed_class (transformers.py:958-990): the input embedding's width (or the
    text config's `embedding_size` / `hidden_size`), asserted; VocabParallelEmbedding pads the
    vocab size (vocab_parallel_embedding.py:273); `set_input_embeddings` must take the new
    module (here the old one is set back, so the shared meta build is left as it was)."""
    old = model.get_input_embeddings()
    if old is None:
        return Verdict(True, "no input embeddings: nothing to replace")
    dim = getattr(old, "embedding_dim", None)
    if dim is None:
        dim = _getattr_first(text, ("embedding_size", "hidden_size"), None)
    _asserted(dim is not None)
    ((vocab_size + 64 - 1) // 64) * 64  # pad_vocab_size(org_vocab_size, DEFAULT_VOCAB_PADDING_SIZE)
    model.set_input_embeddings(old)
    return Verdict(True, f"{vocab_size} x {dim}", {"embedding_dim": dim,
                                                   "scaled": getattr(old, "embed_scale", None) is not None})
