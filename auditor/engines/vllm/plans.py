"""The parallel plans of vLLM 0.33.0's Transformers modeling backend, emulated: the
pipeline-parallel split and the tensor-parallel plan as `Base.recursive_replace` meets it, and
that walk over the modules (which the attention gate reuses). References as in gates.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from auditor.engines.interface import Verdict, cited, engine_line, noted, transcribed
from auditor.engines.vllm.gates import getattr_iter, num_experts
from auditor.engines.vllm.releases import followed

# hf_config.py:70-81 (CONFIG_FIELD_ALIASES["num_experts_per_token"], ["moe_intermediate_size"])
_TOP_K = ("num_experts_per_tok", "num_experts_per_token", "top_k_experts", "moe_topk", "moe_top_k", "top_k")
_MOE_INTERMEDIATE = ("moe_intermediate_size", "intermediate_size")

# vocab_embeddings' answers while in `computed_once()`, by (model id, vocab sizes); None outside.
_EMBEDDINGS: dict[tuple[int, frozenset[int]], set[int]] | None = None


@contextlib.contextmanager
def computed_once() -> Iterator[None]:
    """While in the block, `vocab_embeddings` walks each model once for each set of vocab sizes:
    the tp-plan and attention gates (and the own-code variants) ask it of the same built model,
    which no gate changes. Scoped to the block (meeting.py holds the model alive through it), so
    a model's id can never be reused for another model in the cache."""
    global _EMBEDDINGS
    saved, _EMBEDDINGS = _EMBEDDINGS, {}
    try:
        yield
    finally:
        _EMBEDDINGS = saved


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
    with engine_line(followed().engine, cited(followed(), "Base.pipeline_parallel")):
        lists = [name for name in names if isinstance(attrgetter(name)(module), nn.ModuleList)]
    extras = {"plan": source, "module_lists": lists}
    if len(lists) > 1:
        return Verdict(False, "ValueError: Pipeline parallel of models with multiple `ModuleList`s in the base "
                              "model are not supported yet!", extras)
    if not lists:
        return Verdict(False, f"ValueError: Could not find `ModuleList` in {type(module)}", extras)
    return Verdict(True, f"{source}: {lists[0]}", extras)


@transcribed(followed(), "Base._vocab_embeddings")
def vocab_embeddings(model, config) -> set[int]:
    """Base._vocab_embeddings, as ids. May raise as it does in vLLM: a model
    whose `get_input_embeddings` is not implemented stops recursive_replace there."""
    import torch.nn as nn

    sizes = frozenset(_vocab_sizes(config))
    key = (id(model), sizes)
    if _EMBEDDINGS is not None and key in _EMBEDDINGS:
        return _EMBEDDINGS[key]
    embeddings = {id(m) for m in model.get_input_embeddings().modules() if isinstance(m, nn.Embedding)}
    embeddings |= {id(m) for m in _modules(model) if isinstance(m, nn.Embedding) and m.num_embeddings in sizes}
    if _EMBEDDINGS is not None:  # only answers: a model that raises here raises again each time
        _EMBEDDINGS[key] = embeddings
    return embeddings


def _modules(model) -> Iterator:
    """The modules `model.modules()` yields (each once), in another order: without its chain of
    nested generators, whose cost grows with the depth of every module. Where a class in the
    model walks its own way (overrides `modules` or `named_modules`), its own walk."""
    import torch.nn as nn

    seen = {id(model)}
    found, stack = [], [model]
    while stack:
        module = stack.pop()
        if type(module).modules is not nn.Module.modules or type(module).named_modules is not nn.Module.named_modules:
            return model.modules()
        found.append(module)
        for child in module._modules.values():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return found


def walk(model, embeddings: set[int]):
    """The modules Base.recursive_replace visits (base.py:539-597), as (qualified name, module,
    parent): it replaces linear, conv, vocab-embedding and layer-norm modules without looking
    inside."""
    import torch.nn as nn

    replaced_types = (nn.Linear, nn.Conv2d, nn.Conv3d, nn.LayerNorm)
    # Depth first, parents before children, children in order: recursive_replace's order, kept
    # with a stack of (prefix, parent, remaining children) rather than a generator per level.
    stack = [("model", model, iter(model.named_children()))]
    while stack:
        prefix, parent, children = stack[-1]
        for name, child in children:
            qual = f"{prefix}.{name}"
            yield qual, child, parent
            if not (isinstance(child, replaced_types) or id(child) in embeddings):
                stack.append((qual, child, iter(child.named_children())))
                break
        else:
            stack.pop()


@transcribed(followed(), "Base._vocab_embeddings sizes")
def _vocab_sizes(config) -> set[int]:
    """Base._vocab_embeddings' sizes."""
    from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

    sizes: set[int] = set()
    for key, value in vars(config).items():
        if isinstance(value, PreTrainedConfig):
            sizes |= _vocab_sizes(value)
        elif "vocab_size" in key and isinstance(value, int):
            sizes.add(value)
    return sizes


@transcribed(followed(), "replace_linear_class style")
def unsupported_style(child, style, qual: str) -> str | None:
    """The message replace_linear_class raises for a style that is not a string."""
    return f"ValueError: Unsupported parallel style type {type(style)}, expected str"


def tp_plan_gate(model, refuse_style: Callable[..., str | None] = unsupported_style) -> Verdict:
    """Base.recursive_replace (base.py:491-597) up to what can stop it outside the attention
    fuser: the tensor parallel plan (base.py:375-377, 507), the vocab embeddings (base.py:511),
    then the walk, in its order: at each child of a `ModuleList` it reads
    `text_config.num_hidden_layers` (base.py:543-546; a config without one raises
    AttributeError there), and each linear module's style is the first matching pattern's, a
    style that is not a string raising in replace_linear_class (utils.py:128-129) whatever the
    parallel size; no plan only warns. `refuse_style(module, style, qualified name)`: the
    error that style meets (a message, or None to go on); vLLM's own check in the own-code
    variant (own.py)."""
    import regex as re
    import torch.nn as nn

    from auditor.core.messages import message_of

    moe = moe_gate(model.config)
    if moe is not None:
        return moe
    plan = {f"model.{k}" if k else "model": v for k, v in (model.tp_plan or {}).items()}
    try:
        embeddings = vocab_embeddings(model, model.config)  # base.py:511, before any module is replaced
    except Exception as exc:
        raise noted(exc, where="Base._vocab_embeddings") from None
    text = model.config.get_text_config()
    counted = hasattr(text, "num_hidden_layers")
    if counted and all(isinstance(style, str) for style in plan.values()):
        # Every style a linear module can get is a string (or "replicate") and the layer count
        # reads: nothing raises, and no module need be matched against the patterns.
        return _tp_pass(plan)
    for qual, child, parent in walk(model, embeddings):
        if not counted and isinstance(parent, nn.ModuleList):
            try:
                text.num_hidden_layers  # noqa: B018 (base.py:545: the read is what raises)
            except AttributeError as exc:
                return Verdict(False, message_of(exc), {"module": qual, "where": "Base.recursive_replace"})
        if isinstance(child, nn.Linear):
            pattern = next((p for p in plan if re.match(p, qual)), None)
            style = plan.get(pattern, "replicate")
            if not isinstance(style, str):
                message = refuse_style(child, style, qual)
                if message is not None:
                    return Verdict(False, message, {"module": qual})
    return _tp_pass(plan)


def moe_gate(config) -> Verdict | None:
    """What MoEMixin.recursive_replace (moe.py:215-227) asserts before its walk, and before
    Base.recursive_replace (moe.py:450), for a model vLLM serves with a MoE class (gates.py's
    `num_experts`): the text config names a top-k and an expert width. The first alias present
    is read even where it is None (config/utils.py:147-157: deepseek_v2's default config has
    `num_experts_per_tok=None`). vLLM's assertions carry no message: the condition is given.
    None: the assertions hold (or the class is not a MoE one)."""
    if num_experts(config) <= 0:
        return None
    text = config.get_text_config()
    for names, condition in ((_TOP_K, "top_k is not None"), (_MOE_INTERMEDIATE, "intermediate_size is not None")):
        if getattr_iter(text, names) is None:
            return Verdict(False, f"AssertionError: assert {condition} (vLLM's MoEMixin.recursive_replace)",
                           {"where": "MoEMixin.recursive_replace", "fields": list(names)})
    return None


def _tp_pass(plan: dict) -> Verdict:
    if not plan:
        return Verdict(True, "no tensor parallel plan: vLLM warns and shards what fuses", {"entries": 0})
    return Verdict(True, f"{len(plan)} entries", {"entries": len(plan)})

