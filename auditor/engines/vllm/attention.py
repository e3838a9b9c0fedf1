"""The attention gate of vLLM 0.33.0's Transformers modeling backend, emulated: every decoder
layer dispatches attention through transformers' interface from exactly one module
(fusers/attention.py, base.py). References as in gates.py.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from auditor.core.fault import EngineRefusal
from auditor.engines.interface import Verdict, noted, transcribed
from auditor.engines.vllm.build import VLLM_ATTN_IMPL, VLLM_MLA_ATTN_IMPL
from auditor.engines.vllm.plans import vocab_embeddings, walk
from auditor.engines.vllm.releases import followed


@transcribed(followed(), "interface lookup")
def _is_interface_lookup(node) -> bool:
    """vLLM's check for a lookup in ALL_ATTENTION_FUNCTIONS."""
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
@transcribed(followed(), "interface_call")
def interface_call(forward) -> ast.Call | None:
    """vLLM's `interface_call(forward)`: the one call `forward` makes through
    a name it read from ALL_ATTENTION_FUNCTIONS, or None (none, or more than one).

    The source is parsed only when the compiled code (nested functions included) names
    ALL_ATTENTION_FUNCTIONS at all: the Name node vLLM looks for compiles to one of those names."""
    code = getattr(inspect.unwrap(forward), "__code__", None)
    if code is not None and "ALL_ATTENTION_FUNCTIONS" not in _names(code):
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(forward))))
    except (AttributeError, OSError, SyntaxError, TypeError):
        return None
    names: set[str] = set()
    calls: list[ast.Call] = []  # every call through a plain name; one pass over the tree for both
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_interface_lookup(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.append(node)
    found = [call for call in calls if call.func.id in names]
    return found[0] if len(found) == 1 else None


def dispatches(forward) -> bool:
    return interface_call(forward) is not None


@dataclass(frozen=True)
class Dispatch:
    """A module that dispatches a layer's attention to vLLM, as recursive_replace registers it:
    `scale()` and `sinks()` return what AttentionFuser.scale/.sinks would, or raise vLLM's error."""

    qual: str
    index: int
    scale: Callable[[], object]
    sinks: Callable[[], object]


@transcribed(followed(), "fuser keyword")
def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    """The expression of a keyword given exactly once."""
    values = [kw.value for kw in call.keywords if kw.arg == name]
    return values[0] if len(values) == 1 else None


@transcribed(followed(), "fuser resolve")
def _resolve(node: ast.expr, module) -> object:
    """The fuser's resolution: literals and `self.<attr>`, else None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return getattr(module, node.attr, None)
    return None


@transcribed(followed(), "AttentionFuser.scale")
def _scale(expr: ast.expr | None, module) -> float | None:
    """AttentionFuser.scale."""
    if expr is None:
        return None
    scale = _resolve(expr, module)
    if not isinstance(scale, (int, float)) or isinstance(scale, bool):
        raise EngineRefusal(f"ValueError: Cannot resolve attention scaling expression {ast.unparse(expr)!r} in "
                            f"{type(module).__name__}.")
    return float(scale)


@transcribed(followed(), "AttentionFuser.sinks")
def _sinks(expr: ast.expr | None, module) -> object:
    """AttentionFuser.sinks."""
    import torch.nn as nn

    if expr is None:
        return None
    s_aux = _resolve(expr, module)
    if not isinstance(s_aux, (nn.Parameter, type(None))):
        raise EngineRefusal(f"ValueError: Cannot resolve attention s_aux expression {ast.unparse(expr)!r} in "
                            f"{type(module).__name__}.")
    return s_aux


def attention_gate(model, vllm_config) -> Verdict:
    """The attention layers vLLM makes: the modules that dispatch through the attention
    interface with vLLM's implementation and an int `layer_idx` (AttentionFuser:
    fusers/attention.py:97-136), registered one per layer and fused in recursive_replace
    (base.py:515-530, 582-585), then one vLLM attention per layer in _create_attention_instances
    (base.py:609-708). `vllm_config`: the model's config with its text config's implementation
    set to "vllm"."""

    def dispatching():
        for qual, child, _ in walk(model, vocab_embeddings(model, vllm_config)):
            call = interface_call(type(child).forward)
            if call is None:
                continue
            if getattr(getattr(child, "config", None), "_attn_implementation", None) not in (VLLM_ATTN_IMPL,
                                                                                         VLLM_MLA_ATTN_IMPL):
                continue
            index = getattr(child, "layer_idx", None)
            if isinstance(index, int):
                yield Dispatch(qual, index, functools.partial(_scale, _keyword(call, "scaling"), child),
                               functools.partial(_sinks, _keyword(call, "s_aux"), child))

    return layers_verdict(dispatching(), vllm_config)


def layers_verdict(dispatching, vllm_config) -> Verdict:
    """vLLM's rule on the modules that dispatch attention (Dispatch, however they were found:
    the emulation's walk, or vLLM's own AttentionFuser), in its order. In recursive_replace,
    module by module: one module per layer (base.py:523-529), then the fuse reads its sinks
    (fusers/attention.py:123). In _create_attention_instances: the layer range reads
    `text_config.num_hidden_layers` (base.py:628, 601-607), then layer by layer a dispatching
    module (base.py:630-640), its scale (base.py:651) and, for a sliding layer, the config's
    `sliding_window` (base.py:692-693). A step that raises stops vLLM with its message."""

    found: dict[int, Dispatch] = {}
    try:
        for dispatch in dispatching:
            if dispatch.index in found:
                return Verdict(False, f"ValueError: Layer {dispatch.index} dispatches attention from more than one "
                                      f"module ({found[dispatch.index].qual} and {dispatch.qual}), which one vLLM "
                                      "attention layer cannot serve.", {"layer": dispatch.index})
            found[dispatch.index] = dispatch
            dispatch.sinks()
        text = vllm_config.get_text_config()
        n_layers = text.num_hidden_layers
        layer_types = getattr(text, "layer_types", None)
        for i in range(n_layers):
            if i not in found:
                layer = f"{i} ({layer_types[i]})" if layer_types and i < len(layer_types) else str(i)
                return Verdict(False, f"ValueError: Layer {layer} does not dispatch through the Transformers "
                                      "attention interface and vLLM has no other way to handle it.",
                               {"layer": i, "layers_dispatching": len(found)})
            found[i].scale()
            if layer_types and layer_types[i] == "sliding_attention":
                text.sliding_window  # noqa: B018 (base.py:693: the read is what raises)
    except Exception as exc:
        raise noted(exc, layers_dispatching=len(found)) from None
    return Verdict(True, f"{n_layers} layers dispatch", {"layers_dispatching": len(found)})
