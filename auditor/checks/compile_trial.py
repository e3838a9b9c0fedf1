"""Compiling one component of a tiny model the way a serving engine does, and judging the outcome.

`compile_component(config, component, options, semantics)` decorates the component's class in
compile mode, builds the tiny model, runs it eagerly at every size of `semantics`
(auditor.engines.interface.CompileSemantics: sequence lengths for the decoder, numbers of images
or clips for an encoder), then compiled: compiled at the first size, then called at the others,
and returns a CompileOutcome.

* With the guards kept (plain `torch.compile`), a later size that needs another graph raises
  (`error_on_recompile`): `recompiled`.
* Without them (vLLM's way), the graph compiled at the first size runs at every other size, as it
  would in the engine: a later size where it crashes, or gives another output than eager, is
  `specialized`, its message naming the size and which.

Dynamo's state is reset before compiling; the caller resets it afterwards.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditor.checks.compile_breaks import component_breaks, first_lines
from auditor.core.classifier import Phase, classify
from auditor.core.messages import signature_of
from auditor.core.status import Status


@dataclass(frozen=True)
class CompileOutcome:
    status: Status
    message: str = ""
    signature: str = ""
    extras: dict[str, Any] = field(default_factory=dict)


class CountingBackend:
    """A torch.compile backend that counts the graphs it compiles and hands them to a named one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.graphs = 0

    def __call__(self, graph_module, example_inputs):
        from torch._dynamo import lookup_backend

        self.graphs += 1
        return lookup_backend(self.name)(graph_module, example_inputs)


@dataclass(frozen=True)
class Compiler:
    """What compiles a component: the decorator applied to its class (compile mode), a context
    that must be current while the model is built and called (an engine's config; none for the
    project's own decorator), and how many graphs it has compiled so far."""

    decorator: Any  # auditor.engines.decorating.Decorator
    graphs: Callable[[], int]
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext


def project_compiler(options, semantics) -> Compiler:
    """The project's decorator under `options.compile_policy`, compiling on `options.backend`
    with the guards `semantics` keeps."""
    from auditor.engines.decorating import OwnDecorator

    backend = CountingBackend(options.backend)
    decorator = OwnDecorator(options.compile_policy, compile_mode="compile", backend=backend,
                             guards=semantics.guards)
    return Compiler(decorator, lambda: backend.graphs)


def engine_compiler(engine, options) -> Compiler:
    """The engine's own decorator and wrapper (Engine.own_compiler: vLLM's, needs vLLM), compiling
    on `options.backend`, its graphs counted."""
    backend = CountingBackend(options.backend)
    own = engine.own_compiler(backend)
    return Compiler(own.decorator, lambda: backend.graphs, own.context)


def compile_component(config, component, options, semantics, trust_remote_code: bool = False,
                      compiler: Compiler | None = None, dtype: str = "float32") -> CompileOutcome:
    """The compile outcome of `component` (auditor.models.components.Component) of `config`'s tiny
    model built in `dtype`, compiled by `compiler` (default: the project's decorator, project_compiler)."""
    from auditor.engines.decorating import DecorateError, decorated
    from auditor.models.tiny import build_tiny

    compiler = compiler or project_compiler(options, semantics)
    try:
        with compiler.context(), decorated(component.cls, compiler.decorator, component.dynamic_arg_dims):
            try:
                model = build_tiny(config, options.device, trust_remote_code=trust_remote_code, dtype=dtype)
            except Exception as exc:
                failure = classify(exc, Phase.DECORATED, decorator_files=compiler.decorator.source_files())
                return CompileOutcome(failure.status, failure.message, failure.signature)
            return _Trial(model, component, compiler, options.device, semantics).run()
    except DecorateError as exc:
        return CompileOutcome(exc.status, exc.message, exc.signature)


class _Trial:
    """One component: its feeds, its eager outputs, then its compiled ones."""

    def __init__(self, model, component, compiler: Compiler, device: str, semantics) -> None:
        self.model = model
        self.component = component
        self.compiler = compiler
        self.device = device
        self.semantics = semantics
        self.sizes: tuple[int, ...] = ()
        self.extras: dict[str, Any] = {}

    def run(self) -> CompileOutcome:
        import torch

        from auditor.models.inputs import CannotFeed

        try:
            call, ways = self._feeds()
        except CannotFeed as exc:
            return self._outcome(Status.SKIPPED, f"cannot feed it: {exc}")
        ways = _in_dtype(ways, getattr(self.model, "dtype", torch.float32))
        instances = [m for m in self.model.modules() if isinstance(m, self.component.cls)]
        _without_cache(self.model.config)
        with torch.no_grad(), self._attention() as opaque:
            self.extras["engine_attention"] = opaque
            _compiling(instances, False)
            eager, feeds, failed = self._eager(call, ways)
            if failed is not None:
                return self._failure(failed, Phase.EAGER)
            _compiling(instances, True)
            torch._dynamo.reset()
            first, failed = self._timed("compile_seconds", lambda: call(feeds[0]))
            if failed is not None:
                return self._compile_failure(failed, instances, lambda: call(feeds[0]))
            graphs = self.extras["graphs"] = self.compiler.graphs()
            if graphs == 0:
                return self._outcome(Status.SKIPPED, f"the forward never calls {self.component.cls.__name__}")
            if self.semantics.guards:
                return self._guarded(call, feeds, eager, first, graphs)
            return self._unguarded(call, feeds, eager, first)

    def _attention(self) -> contextlib.AbstractContextManager:
        """The engine's attention (an opaque op) for eager and compiled runs alike, where the
        semantics say the engine replaces the model's; yields whether the model dispatches to it."""
        if self.semantics.opaque_attention is None:
            return contextlib.nullcontext(False)
        return self.semantics.opaque_attention(self.model)

    def _guarded(self, call, feeds: list[dict], eager: list, first, graphs: int) -> CompileOutcome:
        """Plain semantics: every later size must reuse the first graph, else `recompiled`."""
        import torch

        compiled = [first]
        for index, feed in enumerate(feeds[1:], start=1):
            with torch._dynamo.config.patch(error_on_recompile=True):
                output, failed = self._timed(_run_key(index), lambda feed=feed: call(feed))
            self.extras["graphs"] = self.compiler.graphs()
            if failed is not None:
                return self._compile_failure(failed)
            if self.compiler.graphs() > graphs:
                return self._outcome(Status.RECOMPILED, "the second length compiled another graph")
            compiled.append(output)
        return self._compare(eager, compiled)

    def _unguarded(self, call, feeds: list[dict], eager: list, first) -> CompileOutcome:
        """Engine semantics: the first graph runs at every later size, as the engine runs it."""
        diff, allowed = self._difference(eager[0], first)
        if diff > allowed:
            return self._mismatch(diff, allowed)
        what = self._what()
        for index, feed in enumerate(feeds[1:], start=1):
            output, failed = self._timed(_run_key(index), lambda feed=feed: call(feed))
            self.extras["graphs"] = self.compiler.graphs()
            size = self.sizes[index]
            if failed is not None:
                failure = classify(failed, Phase.COMPILE)
                self.extras.update(failed_at=size, failure="crashed")
                return self._outcome(Status.SPECIALIZED, f"the graph compiled at {what} {self.sizes[0]} crashed at "
                                                         f"{what} {size}: {failure.message}",
                                     failure.signature)
            diff, allowed = self._difference(eager[index], output)
            if diff > allowed:
                self.extras.update(failed_at=size, failure="differed")
                return self._outcome(Status.SPECIALIZED, f"the graph compiled at {what} {self.sizes[0]} gave another "
                                                         f"output at {what} {size}: it differs from eager by "
                                                         f"{diff:.3g} (tolerance {allowed:.3g})")
        return self._outcome(Status.COMPILED, "")

    def _what(self) -> str:
        return "length" if self.component.name == "decoder" else "size"

    def _feeds(self) -> tuple[Callable[[dict], Any], list[list[dict]]]:
        """What to call, and the ways to feed it (one feed per size each), to try in order."""
        from auditor.models.inputs import CannotFeed, decoder_feeds, encoder_inputs

        if self.component.name == "decoder":
            self.sizes = self.semantics.lengths
            self.extras["sizes"] = list(self.sizes)
            return (lambda feed: self.model(**feed)), decoder_feeds(self.model, self.sizes, device=self.device,
                                                                    positions=self.semantics.positions)
        modality = self.component.name.split(":", 1)[1].split("+")[0]
        encoder = self.model.get_encoder(modality=modality)
        if encoder is None:
            raise CannotFeed(f"no {modality} encoder")
        self.sizes = self.semantics.encoder_sizes
        self.extras["sizes"] = list(self.sizes)
        return (lambda feed: encoder(**feed)), [[encoder_inputs(encoder, n, device=self.device)
                                                 for n in self.sizes]]

    def _eager(self, call, ways: list[list[dict]]) -> tuple[list | None, list[dict], Exception | None]:
        """The eager outputs of the first way of feeding that works; else the first way's failure."""
        first_failure = None
        for feeds in ways:
            outputs, failed = self._timed("eager_seconds", lambda feeds=feeds: [call(feed) for feed in feeds])
            if failed is None:
                self.extras["inputs"] = sorted(feeds[0])
                return outputs, feeds, None
            first_failure = first_failure or failed
        return None, [], first_failure

    def _timed(self, name: str, function: Callable[[], Any]) -> tuple[Any, Exception | None]:
        start = time.perf_counter()
        try:
            value = function()
            _synchronize(self.device)
        except Exception as exc:
            return None, exc
        finally:
            self.extras[name] = round(time.perf_counter() - start, 4)
        return value, None

    def _compile_failure(self, exc: Exception, instances: Sequence = (),
                         run: Callable[[], Any] | None = None) -> CompileOutcome:
        failure = classify(exc, Phase.COMPILE)
        status, message = failure.status, failure.message
        if status is Status.RECOMPILED:
            self.extras["recompile_reason"] = first_lines(str(exc), 3)
            if not self.semantics.guards:  # no guard can fail: the first compile specialized a marked dim
                self.extras.update(failed_at=self.sizes[0], failure="specialized")
                status = Status.SPECIALIZED
                message = f"compiling at {self._what()} {self.sizes[0]} specialized a dim marked dynamic: {message}"
        elif status is Status.GRAPH_BREAK:
            self.extras["break_reason"] = first_lines(str(exc), 2)
            self.extras["break_location"] = _user_location(exc)
            if run is not None:  # every break, not only the first (auditor.checks.compile_breaks)
                self.extras["breaks"] = [b.as_extras() for b in component_breaks(instances, run)]
        return self._outcome(status, message, failure.signature)

    def _failure(self, exc: Exception, phase: Phase) -> CompileOutcome:
        failure = classify(exc, phase)
        return self._outcome(failure.status, failure.message, failure.signature)

    def _compare(self, eager: Sequence[Any], compiled: Sequence[Any]) -> CompileOutcome:
        worst, tolerance = 0.0, 0.0
        for expected, actual in zip(eager, compiled, strict=True):
            diff, allowed = compare(expected, actual)
            worst, tolerance = max(worst, diff), max(tolerance, allowed)
        self.extras.update(max_abs_diff=worst, tolerance=tolerance)
        if worst > tolerance:
            return self._mismatch(worst, tolerance)
        return self._outcome(Status.COMPILED, "")

    def _difference(self, expected: Any, actual: Any) -> tuple[float, float]:
        """compare(), keeping the largest difference and tolerance seen in the extras."""
        diff, allowed = compare(expected, actual)
        self.extras["max_abs_diff"] = max(diff, self.extras.get("max_abs_diff", 0.0))
        self.extras["tolerance"] = max(allowed, self.extras.get("tolerance", 0.0))
        return diff, allowed

    def _mismatch(self, diff: float, allowed: float) -> CompileOutcome:
        return self._outcome(Status.MISMATCH, f"compiled output differs from eager by {diff:.3g} "
                                              f"(tolerance {allowed:.3g})")

    def _outcome(self, status: Status, message: str, signature: str = "") -> CompileOutcome:
        if message and not signature:
            signature = signature_of(message)
        return CompileOutcome(status, message, signature, dict(self.extras))


def compare(expected: Any, actual: Any) -> tuple[float, float]:
    """The largest absolute difference between the floating tensors of two outputs, and the
    tolerance for it (atol + rtol * the largest expected magnitude, by dtype); inf when the
    outputs do not even have the same tensors and shapes."""
    import torch

    left, right = list(_tensors(expected)), list(_tensors(actual))
    if len(left) != len(right):
        return float("inf"), 0.0
    worst, tolerance = 0.0, 0.0
    for a, b in zip(left, right, strict=True):
        if not (a.is_floating_point() and b.is_floating_point()):
            continue
        if a.shape != b.shape:
            return float("inf"), 0.0
        atol, rtol = tolerance_for(a.dtype)
        a, b = a.detach().float(), b.detach().float()
        diff = torch.where(torch.isnan(a) & torch.isnan(b), torch.zeros_like(a), (a - b).abs())
        diff = torch.nan_to_num(diff, nan=float("inf"))
        scale = float(torch.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0).abs().max()) if a.numel() else 0.0
        worst = max(worst, float(diff.max()) if diff.numel() else 0.0)
        tolerance = max(tolerance, atol + rtol * scale)
    return worst, tolerance


def tolerance_for(dtype) -> tuple[float, float]:
    """(atol, rtol) for outputs of `dtype`: what reordered floating-point arithmetic can explain."""
    import torch

    return {torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2),
            torch.float64: (1e-7, 1e-6)}.get(dtype, (1e-4, 1e-3))


def _in_dtype(ways: list[list[dict]], dtype) -> list[list[dict]]:
    """The feeds with their floating tensors (pixel values, audio features) in the model's dtype, as
    a serving engine's processor hands them to a half-precision model; unchanged in float32."""
    import torch

    if dtype == torch.float32:
        return ways
    return [[{name: value.to(dtype) if isinstance(value, torch.Tensor) and value.is_floating_point() else value
              for name, value in feed.items()} for feed in feeds] for feeds in ways]


def _tensors(output: Any):
    """The tensors of a model output, in order: ModelOutput, tuple, list, dict or tensor."""
    import torch

    if isinstance(output, torch.Tensor):
        yield output
    elif isinstance(output, dict):  # ModelOutput is an OrderedDict of its non-None fields
        for value in output.values():
            yield from _tensors(value)
    elif isinstance(output, (list, tuple)):
        for value in output:
            yield from _tensors(value)


def _without_cache(config) -> None:
    """use_cache=False throughout the config tree, as a serving engine runs (it keeps its own cache)."""
    from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

    for name, value in list(config.__dict__.items()):
        if isinstance(value, PreTrainedConfig):
            _without_cache(value)
        elif name == "use_cache":
            config.use_cache = False


def _run_key(index: int) -> str:
    """The timing extra of the compiled call at the index-th size (the second keeps its old name)."""
    return "first_run_seconds" if index == 1 else f"run_{index}_seconds"


def _compiling(instances: list, on: bool) -> None:
    for instance in instances:
        instance.do_not_compile = not on


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _user_location(exc: BaseException) -> str:
    """`file:line in function` of the innermost model frame dynamo was tracing, when it says."""
    stack = getattr(exc, "real_stack", None)
    frames = list(stack) if stack else []
    if not frames:
        return ""
    frame = frames[-1]
    filename = frame.filename.split("site-packages/")[-1]
    return f"{filename}:{frame.lineno} in {frame.name}"
