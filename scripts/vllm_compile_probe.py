"""vLLM's own compile path on tiny models: the reference the compile check's emulation is held against.

    VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/vllm_compile_probe.py \
        llama gpt2 ... [--lengths 7,13,29] [--backend aot_eager] [--plugin FILE] [--json]

Run in a venv with vLLM. Each model type's default config is shrunk and built tiny (the compile
check's tiny model), its decoder class decorated with vLLM's real `support_torch_compile` building
under DYNAMO_TRACE_ONCE (auditor.engines.vllm.own_compile), run eagerly at every length with
compilation off, then compiled at the first length and called at the others on that graph, as
vLLM serves it. Per length: `compiled` (equal to eager within the dtype's tolerance, by
auditor.checks.compile_trial.compare), `differs (max diff)`, `crashed (message)`; and the number
of graphs the backend compiled. A type that stops earlier says where (`build`, `decorate`, `eager`, ...). After a
first compile that fails, vLLM has no graph: the later lengths are not run. --plugin imports a
file that registers model types (tests/checks/compile/plugin_models.py); --json prints one JSON object a
type instead of the table. Fed as the compile check feeds a decoder (auditor.models.inputs).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Step:
    length: int
    outcome: str  # compiled | differs | crashed
    detail: str = ""


@dataclass(frozen=True)
class Probe:
    model_type: str
    steps: tuple[Step, ...] = ()
    graphs: int = 0
    stopped: str = ""  # where the probe stopped before compiling, and why

    def line(self) -> str:
        if self.stopped:
            return f"{self.model_type}: {self.stopped}"
        steps = "  ".join(f"{s.length}: {s.outcome}" + (f" ({s.detail})" if s.detail else "") for s in self.steps)
        return f"{self.model_type}: {steps}  graphs={self.graphs}"


def probe(model_type: str, lengths: tuple[int, ...], backend: str) -> Probe:
    from auditor.checks.compile_trial import CountingBackend
    from auditor.engines.vllm.decorators import DecorateError, decorated
    from auditor.engines.vllm.own_compile import own_compiler
    from auditor.models.components import find_components
    from auditor.models.meta import make_config
    from auditor.models.tiny import build_tiny, tiny_model

    try:
        tiny = tiny_model(make_config(model_type))
    except Exception as exc:
        return Probe(model_type, stopped=f"build: {_brief(exc)}")
    decoder = find_components(tiny.model).items[0]
    counter = CountingBackend(backend)
    compiler = own_compiler(counter)
    try:
        with decorated(decoder.cls, compiler.decorator, decoder.dynamic_arg_dims):
            try:
                model = build_tiny(tiny.config)
            except Exception as exc:
                return Probe(model_type, stopped=f"build under vLLM's decorator: {_brief(exc)}")
            steps, stopped = _trial(model, decoder.cls, lengths, compiler)
    except DecorateError as exc:
        return Probe(model_type, stopped=f"decorate: {exc.message}")
    return Probe(model_type, tuple(steps), counter.graphs, stopped)


def _trial(model, cls: type, lengths: tuple[int, ...], compiler) -> tuple[list[Step], str]:
    import torch

    from auditor.checks.compile_trial import compare
    from auditor.models.inputs import CannotFeed, decoder_feeds

    instances = [m for m in model.modules() if isinstance(m, cls)]
    try:
        ways = decoder_feeds(model, lengths)
    except CannotFeed as exc:
        return [], f"cannot feed it: {exc}"
    with torch.no_grad():
        _compiling(instances, False)
        eager, feeds, failure = _eager(model, ways)
        if failure:
            return [], f"eager: {failure}"
        _compiling(instances, True)
        torch._dynamo.reset()
        steps: list[Step] = []
        with compiler.context():
            for length, feed, expected in zip(lengths, feeds, eager, strict=True):
                try:
                    actual = model(**feed)
                except Exception as exc:
                    steps.append(Step(length, "crashed", _brief(exc)))
                    if len(steps) == 1:
                        break  # no graph: vLLM would not have started
                    continue
                diff, tolerance = compare(expected, actual)
                steps.append(Step(length, "compiled") if diff <= tolerance
                             else Step(length, "differs", f"max diff {diff:.3g}, tolerance {tolerance:.3g}"))
    return steps, ""


def _eager(model, ways) -> tuple[list, list, str]:
    """The eager outputs of the first way of feeding that runs at every length, as the compile
    check picks it; else the first way's failure."""
    first = ""
    for feeds in ways:
        try:
            return [model(**feed) for feed in feeds], feeds, ""
        except Exception as exc:
            first = first or _brief(exc)
    return [], [], first


def _compiling(instances: list, on: bool) -> None:
    for instance in instances:
        instance.do_not_compile = not on  # vLLM's __call__ reads it first


def _brief(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


def _load(path: str) -> None:
    """Import a plugin file as a module of its own (registering its types), kept in sys.modules so
    that its classes' modules exist for transformers and dynamo."""
    name = "auditor_probe_plugin_" + str(len(sys.modules))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_types", nargs="+")
    parser.add_argument("--lengths", default="7,13,29", help="decoder lengths, the first compiles (default 7,13,29)")
    parser.add_argument("--backend", default="aot_eager", help="torch backend vLLM's config names (default aot_eager)")
    parser.add_argument("--plugin", action="append", default=[], help="a file that registers model types")
    parser.add_argument("--json", action="store_true", help="one JSON object a type")
    args = parser.parse_args(argv)
    for plugin in args.plugin:
        _load(plugin)
    lengths = tuple(int(n) for n in args.lengths.split(","))
    for model_type in args.model_types:
        try:
            result = probe(model_type, lengths, args.backend)
        except Exception as exc:  # the probe's own failure on this type: say so, go on with the next
            result = Probe(model_type, stopped=f"probe failed: {_brief(exc)}")
        print(json.dumps(asdict(result)) if args.json else result.line(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
