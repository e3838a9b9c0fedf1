"""The attention gate of vLLM 0.33.0's Transformers modeling backend, emulated: every decoder
layer dispatches attention through transformers' interface from exactly one module
(fusers/attention.py, base.py). References as in gates.py.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap

from auditor.engines.interface import Verdict
from auditor.engines.vllm.build import VLLM_ATTN_IMPL, VLLM_MLA_ATTN_IMPL
from auditor.engines.vllm.plans import vocab_embeddings, walk


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
    called: list[str] = []  # the names called, one entry a call; one pass over the tree for both
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_interface_lookup(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.append(node.func.id)
    return sum(name in names for name in called) == 1


def attention_gate(model, vllm_config) -> Verdict:
    """Every decoder layer 0..num_hidden_layers-1 has exactly one module that dispatches through
    the attention interface with vLLM's implementation and an int `layer_idx` (AttentionFuser:
    fusers/attention.py:97-136; registered in base.py:515-530; required in base.py:628-640).
    `vllm_config`: the model's config with its text config's implementation set to "vllm"."""

    def dispatching():
        for qual, child in walk(model, vocab_embeddings(model, vllm_config)):
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

