"""Compiling one component of a tiny model the way a serving engine does, and judging the outcome.

`compile_component(config, component, options)` decorates the component's class in compile mode,
builds the tiny model, runs it eagerly on two sizes (sequence lengths for the decoder, numbers
of images or clips for an encoder), then compiled on the same two, and returns a
CompileOutcome. Dynamo's state is reset before compiling; the caller resets it afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditor.checks.compile_breaks import component_breaks
from auditor.core.status import Phase, Status, classify, signature_of

LENGTHS = (7, 13)  # decoder tokens: odd and unlike any tiny width, so no dim passes for another
ENCODER_SIZES = (2, 3)  # images or clips per encoder call: not 1, which dynamo specializes


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


def compile_component(config, component, options, trust_remote_code: bool = False) -> CompileOutcome:
    """The compile outcome of `component` (auditor.models.components.Component) of `config`'s tiny model."""
    from auditor.decorators import DecorateError, OwnDecorator, decorated
    from auditor.models.tiny import build_tiny

    backend = CountingBackend(options.backend)
    decorator = OwnDecorator(options.compile_policy, compile_mode="compile", backend=backend)
    try:
        with decorated(component.cls, decorator, component.dynamic_arg_dims):
            try:
                model = build_tiny(config, options.device, trust_remote_code=trust_remote_code)
            except Exception as exc:
                failure = classify(exc, Phase.DECORATED, decorator_files=decorator.source_files())
                return CompileOutcome(failure.status, failure.message, failure.signature)
            return _Trial(model, component, backend, options.device).run()
    except DecorateError as exc:
        return CompileOutcome(exc.status, exc.message, exc.signature)


class _Trial:
    """One component: its feeds, its eager outputs, then its compiled ones."""

    def __init__(self, model, component, backend: CountingBackend, device: str) -> None:
        self.model = model
        self.component = component
        self.backend = backend
        self.device = device
        self.extras: dict[str, Any] = {}

    def run(self) -> CompileOutcome:
        import torch

        from auditor.models.inputs import CannotFeed

        try:
            call, ways = self._feeds()
        except CannotFeed as exc:
            return self._outcome(Status.SKIPPED, f"cannot feed it: {exc}")
        instances = [m for m in self.model.modules() if isinstance(m, self.component.cls)]
        _without_cache(self.model.config)
        with torch.no_grad():
            _compiling(instances, False)
            eager, feeds, failed = self._eager(call, ways)
            if failed is not None:
                return self._failure(failed, Phase.EAGER)
            _compiling(instances, True)
            torch._dynamo.reset()
            first, failed = self._timed("compile_seconds", lambda: call(feeds[0]))
            if failed is not None:
                return self._compile_failure(failed, instances, lambda: call(feeds[0]))
            graphs = self.extras["graphs"] = self.backend.graphs
            if graphs == 0:
                return self._outcome(Status.SKIPPED, f"the forward never calls {self.component.cls.__name__}")
            with torch._dynamo.config.patch(error_on_recompile=True):
                second, failed = self._timed("first_run_seconds", lambda: call(feeds[1]))
            self.extras["graphs"] = self.backend.graphs
            if failed is not None:
                return self._compile_failure(failed)
            if self.backend.graphs > graphs:
                return self._outcome(Status.RECOMPILED, "the second length compiled another graph")
        return self._compare(eager, [first, second])

    def _feeds(self) -> tuple[Callable[[dict], Any], list[list[dict]]]:
        """What to call, and the ways to feed it (one feed per size each), to try in order."""
        from auditor.models.inputs import CannotFeed, decoder_feeds, encoder_inputs

        if self.component.name == "decoder":
            self.extras["sizes"] = list(LENGTHS)
            return (lambda feed: self.model(**feed)), decoder_feeds(self.model, LENGTHS, device=self.device)
        modality = self.component.name.split(":", 1)[1].split("+")[0]
        encoder = self.model.get_encoder(modality=modality)
        if encoder is None:
            raise CannotFeed(f"no {modality} encoder")
        self.extras["sizes"] = list(ENCODER_SIZES)
        return (lambda feed: encoder(**feed)), [[encoder_inputs(encoder, n, device=self.device)
                                                 for n in ENCODER_SIZES]]

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
        if failure.status is Status.RECOMPILED:
            self.extras["recompile_reason"] = _first_lines(str(exc), 3)
        elif failure.status is Status.GRAPH_BREAK:
            self.extras["break_reason"] = _first_lines(str(exc), 2)
            self.extras["break_location"] = _user_location(exc)
            if run is not None:  # every break, not only the first (auditor.checks.compile_breaks)
                self.extras["breaks"] = [b.as_extras() for b in component_breaks(instances, run)]
        return self._outcome(failure.status, failure.message, failure.signature)

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
            return self._outcome(Status.MISMATCH, f"compiled output differs from eager by {worst:.3g} "
                                                  f"(tolerance {tolerance:.3g})")
        return self._outcome(Status.COMPILED, "")

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


def _compiling(instances: list, on: bool) -> None:
    for instance in instances:
        instance.do_not_compile = not on


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _first_lines(text: str, count: int) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:count])[:500]


def _user_location(exc: BaseException) -> str:
    """`file:line in function` of the innermost model frame dynamo was tracing, when it says."""
    stack = getattr(exc, "real_stack", None)
    frames = list(stack) if stack else []
    if not frames:
        return ""
    frame = frames[-1]
    filename = frame.filename.split("site-packages/")[-1]
    return f"{filename}:{frame.lineno} in {frame.name}"
