"""Every graph break of a compiled component, each with the user frame that caused it and its owner.

`torch.compile(fullgraph=True)` stops at the first break, which is all a `graph-break` row said
before. `component_breaks(instances, run)` lists them all: it runs the model once with the
components uncompiled to catch the first component call's arguments, then traces that forward
again with `fullgraph=False`, the dims marked dynamic as the decorator marks them, recording each
break dynamo meets.

Why not `torch._dynamo.explain`: it reads the breaks off the graphs a backend receives, and dynamo
hands a backend no graph when the graph before a break is empty, so two breaks with no tensor
operation between them (a break at the top of a forward, or right after another) are missing from
its list (torch 2.13: of a forward's five breaks it listed four; of the plugin type that breaks
twice, tests/checks/compile/plugin_models.py, one). Dynamo logs every break through one
method, `InstructionTranslatorBase.log_graph_break(code_options, reason, exc)` (2.13 and 2.14), with
the exception that carries the user stack; it is wrapped for the one trace and restored after.
Where a torch has no such method, explain's list is the fallback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from auditor.core.extras import BreakOwner, GraphBreak

_MISSING = object()
_RESUME = "torch_dynamo_resume_in_"  # dynamo's name for the rest of a function after a break


class _NotCalled(Exception):
    """No call reached a component's forward: nothing to trace."""


def component_breaks(instances: Iterable[Any], run: Callable[[], Any]) -> tuple[GraphBreak, ...]:
    """Every graph break of the forward of the first of `instances` (decorated components of one
    built model) that `run()` (one call of the whole model) reaches, in the order dynamo met them,
    one record per place and reason. Empty when no component is called; what was recorded before
    the trace failed otherwise (the row's status is decided elsewhere: this only lists)."""
    import torch

    instances = list(instances)
    try:
        module, args, kwargs = _first_call(instances, run)
    except Exception:  # _NotCalled, or a run that fails this time: listing must never change a row
        return ()
    try:
        return _traced_breaks(module, args, kwargs)
    finally:
        torch._dynamo.reset()


def _first_call(instances: list, run: Callable[[], Any]) -> tuple[Any, tuple, dict]:
    """The first component called by `run()`, with its forward's arguments. Compilation is off
    meanwhile, so the decorator's `__call__` calls `self.forward`: an instance attribute here that
    records, then forwards to the class's."""
    calls: list = []
    saved = [(m, m.__dict__.get("forward", _MISSING), m.__dict__.get("do_not_compile", _MISSING)) for m in instances]

    def recorder(module, forward):
        def forward_and_record(*args, **kwargs):
            if not calls:
                calls.append((module, args, kwargs))
            return forward(*args, **kwargs)
        return forward_and_record

    try:
        for module in instances:
            module.__dict__["forward"] = recorder(module, module.forward)
            module.__dict__["do_not_compile"] = True
        run()
    finally:
        for module, forward, flag in saved:
            _restore(module, "forward", forward)
            _restore(module, "do_not_compile", flag)
    if not calls:
        raise _NotCalled
    return calls[0]


def _restore(module, name: str, value) -> None:
    if value is _MISSING:
        module.__dict__.pop(name, None)
    else:
        module.__dict__[name] = value


def _traced_breaks(module, args: tuple, kwargs: dict) -> tuple[GraphBreak, ...]:
    import torch
    from torch._dynamo import symbolic_convert

    from auditor.engines.decorating import mark_dynamic_inputs

    translator = symbolic_convert.InstructionTranslatorBase
    logged = translator.__dict__.get("log_graph_break")
    if logged is None:
        return _explained(module.forward, args, kwargs)
    found: list[GraphBreak] = []

    def log_graph_break(self, code_options, reason, exc):
        if not getattr(exc, "logged", False):  # dynamo logs an exception once, so do we
            stack = getattr(exc, "real_stack", None) or torch._guards.TracingContext.extract_stack()
            found.append(break_record(str(exc), stack))
        return logged(self, code_options, reason, exc)

    torch._dynamo.reset()
    translator.log_graph_break = log_graph_break
    settings = getattr(module, "compile_settings", None)
    try:
        if settings is not None:  # as the decorator marks them, so that the same graphs are traced
            mark_dynamic_inputs(module, settings.dynamic_arg_dims, args, kwargs)
        torch.compile(module.forward, fullgraph=False, backend="eager")(*args, **kwargs)
    except Exception:  # a failure after some breaks (a guard, the backend) ends the list there
        pass
    finally:
        translator.log_graph_break = logged
    return tuple(dict.fromkeys(found))


def _explained(forward, args: tuple, kwargs: dict) -> tuple[GraphBreak, ...]:
    import torch

    try:
        explained = torch._dynamo.explain(forward)(*args, **kwargs)
    except Exception:  # as above: the list is what the trace got to
        return ()
    return tuple(dict.fromkeys(break_record(r.reason, r.user_stack) for r in explained.break_reasons))


def break_record(message: str, stack: Iterable[Any]) -> GraphBreak:
    """The record of one break: the first two lines of dynamo's message, and its user frame.

    The user frame is the innermost frame outside torch: a break inside torch (a function dynamo
    cannot trace, called from a model) is fixed at the line that calls torch, which is the line a
    model's or transformers' maintainer can change; only a stack all in torch is torch's."""
    frames = [f for f in stack if getattr(f, "filename", None)]
    outside = [f for f in frames if BreakOwner.of(shown_path(f.filename)) is not BreakOwner.TORCH]
    frame = (outside or frames or [None])[-1]
    reason = first_lines(message, 2)
    if frame is None:
        return GraphBreak(reason)
    return GraphBreak(reason, shown_path(frame.filename), frame.lineno, _function(frame.name))


def shown_path(filename: str) -> str:
    """A frame's file as break records spell it: `torch/...`, `transformers/...`, `auditor/...`
    for the packages the owner rule names, wherever they are installed (a source checkout too);
    another file after `site-packages/` or `transformers_modules/` (remote code's cache), or whole."""
    path = str(filename)
    for name, root in _package_roots():
        if path.startswith(root):
            return f"{name}/{path[len(root):]}"
    if "site-packages/" in path:
        return path.rsplit("site-packages/", 1)[1]
    if "transformers_modules/" in path:
        return "transformers_modules/" + path.rsplit("transformers_modules/", 1)[1]
    return path


@functools.cache
def _package_roots() -> tuple[tuple[str, str], ...]:
    """(package, its folder with a trailing slash), as imported and with links resolved."""
    import torch
    import transformers

    import auditor

    return tuple((m.__name__, f"{folder}/") for m in (torch, transformers, auditor)
                 for folder in dict.fromkeys((Path(m.__file__).parent, Path(m.__file__).resolve().parent)))


def _function(name: str) -> str:
    """`forward` for dynamo's `torch_dynamo_resume_in_forward_at_12` (the rest of `forward` after
    a break at line 12, traced as a function of its own)."""
    if name.startswith(_RESUME):
        return name[len(_RESUME):].rsplit("_at_", 1)[0]
    return name


def first_lines(text: str, count: int) -> str:
    """The first `count` non-empty lines of `text`, joined by ` | `, at most 500 characters."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:count])[:500]
