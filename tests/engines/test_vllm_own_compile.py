"""vLLM's own compile path (auditor.engines.vllm.own_compile) on real tiny models: vLLM's decorator
and wrapper in DYNAMO_TRACE_ONCE compile one graph at the first length and run every later length on
it, with no guard to catch a graph specialized to the first.

Each trial is what the compile check does with the `vllm` variant: decorate the decoder class,
build the tiny model, run it eagerly at 7, 13 and 29 with compilation off (`do_not_compile`), then
compiled at the same lengths under the compiler's context, counting the graphs the backend gets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import ROOT, auditor_env

pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'model-sweep-auditor[vllm]'): its own "
                                   "compile path needs it (the nox session `vllm` runs these tests)")

pytestmark = pytest.mark.slow  # importing vLLM alone takes half a minute here

LENGTHS = (7, 13, 29)
PLUGIN = ROOT / "tests" / "checks" / "compile" / "plugin_models.py"


@dataclass
class Trial:
    eager: list[Any]
    compiled: list[Any]  # an output, or the exception the call raised
    graphs_after_eager: int
    graphs: int
    instances: list[Any]

    def diffs(self) -> list[tuple[float, float]]:
        from auditor.checks.compile_trial import compare

        return [compare(e, c) for e, c in zip(self.eager, self.compiled, strict=True)]


def run_trial(model_type: str) -> Trial:
    import torch

    import tests.checks.compile.plugin_models  # noqa: F401  (registers the auditor_compile_* types)
    from auditor.checks.compile_trial import CountingBackend
    from auditor.engines.vllm.decorators import decorated
    from auditor.engines.vllm.own_compile import own_compiler
    from auditor.models.components import find_components
    from auditor.models.inputs import decoder_feeds
    from auditor.models.meta import make_config
    from auditor.models.tiny import build_tiny, tiny_model

    tiny = tiny_model(make_config(model_type))
    decoder = find_components(tiny.model).items[0]
    counter = CountingBackend("aot_eager")
    compiler = own_compiler(counter)
    with decorated(decoder.cls, compiler.decorator, decoder.dynamic_arg_dims):
        model = build_tiny(tiny.config)
        instances = [m for m in model.modules() if isinstance(m, decoder.cls)]
        feeds = decoder_feeds(model, LENGTHS)[0]
        with torch.no_grad():
            for instance in instances:
                instance.do_not_compile = True
            eager = [model(**feed) for feed in feeds]
            graphs_after_eager = counter.graphs
            for instance in instances:
                instance.do_not_compile = False
            torch._dynamo.reset()
            with compiler.context():
                compiled = [_call(model, feed) for feed in feeds]
    return Trial(eager, compiled, graphs_after_eager, counter.graphs, instances)


def _call(model, feed):
    try:
        return model(**feed)
    except Exception as exc:
        return exc


@pytest.fixture(scope="module")
def trials():
    done: dict[str, Trial] = {}

    def get(model_type: str) -> Trial:
        if model_type not in done:
            done[model_type] = run_trial(model_type)
        return done[model_type]

    return get


@pytest.mark.parametrize("model_type", ["llama", "gpt2", "auditor_compile_ok"])
def test_a_type_that_compiles_gets_one_graph_equal_to_eager_at_every_length(trials, model_type):
    from vllm.compilation.wrapper import TorchCompileWithNoGuardsWrapper

    trial = trials(model_type)
    assert trial.graphs_after_eager == 0  # do_not_compile: vLLM's __call__ ran forward as it is
    assert trial.graphs == 1
    assert not [c for c in trial.compiled if isinstance(c, Exception)]
    assert all(diff <= tolerance for diff, tolerance in trial.diffs()), trial.diffs()
    [instance] = trial.instances
    # vLLM's own wrapper compiled it, and dispatched the later lengths to the code of the first
    assert instance.compiled and instance._compiled_bytecode is not None
    assert not isinstance(instance, TorchCompileWithNoGuardsWrapper)  # the class is restored


def test_a_graph_specialized_to_the_first_length_gives_another_output_later_without_an_error(trials):
    trial = trials("auditor_compile_specialize")
    assert trial.graphs == 1
    assert not [c for c in trial.compiled if isinstance(c, Exception)]
    (diff7, tol7), (diff13, tol13), (diff29, tol29) = trial.diffs()
    assert diff7 <= tol7 and diff13 > tol13 and diff29 > tol29


def test_as_vllms_transformers_backend_it_never_takes_the_aot_path(monkeypatch, tmp_path):
    monkeypatch.setenv("VLLM_USE_AOT_COMPILE", "1")  # vLLM's own models would compile ahead of time
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "cache"))  # and keep the artifact there
    trial = run_trial("auditor_compile_ok")
    assert trial.graphs == 1 and not (tmp_path / "cache").exists()
    [instance] = trial.instances
    assert instance._allow_aot_compile is False and getattr(instance, "aot_compiled_fn", None) is None
    assert instance._compiled_bytecode is not None


def test_after_a_trial_that_never_compiled_dynamo_still_compiles(trials):
    import torch

    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        trials("auditor_compile_eager_error")  # built under vLLM's wrapper, then failed eagerly
    # vLLM's own hook of that instance would now fail any compile ('no attribute original_code_object')
    compiled = torch.compile(lambda x: x * 2, backend="eager", fullgraph=True)
    assert compiled(torch.ones(3)).tolist() == [2.0, 2.0, 2.0]


def test_the_decorators_files_are_vllms_decorator_and_wrapper():
    from vllm.compilation import decorators, wrapper

    from auditor.engines.vllm.own_compile import own_compiler

    files = own_compiler("aot_eager").decorator.source_files()
    assert {os.path.abspath(decorators.__file__), os.path.abspath(wrapper.__file__)} <= files


def test_the_probe_script_prints_vllms_outcome_per_type_and_length():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "vllm_compile_probe.py"), "--plugin", str(PLUGIN), "--json",
         "auditor_compile_ok", "auditor_compile_specialize", "auditor_compile_break", "auditor_compile_no_ids"],
        env=auditor_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    probes = {p["model_type"]: p for p in map(json.loads, proc.stdout.splitlines())}
    outcomes = {name: [(s["length"], s["outcome"]) for s in p["steps"]] for name, p in probes.items()}
    assert outcomes["auditor_compile_ok"] == [(7, "compiled"), (13, "compiled"), (29, "compiled")]
    assert outcomes["auditor_compile_specialize"] == [(7, "compiled"), (13, "differs"), (29, "differs")]
    assert outcomes["auditor_compile_break"] == [(7, "crashed")]  # no graph: nothing to run later
    assert "graph_break" in probes["auditor_compile_break"]["steps"][0]["detail"]
    assert probes["auditor_compile_no_ids"]["stopped"].startswith("cannot feed it")
    assert [probes[name]["graphs"] for name in ("auditor_compile_ok", "auditor_compile_specialize")] == [1, 1]


def test_the_compile_checks_emulation_agrees_with_vllms_own_compile(tmp_path):
    """The compile check with `--policies fixed,vllm` writes a `vllm` row per type computed by
    vLLM's own decorator and wrapper; `auditor agree` holds the emulation's `fixed` rows to them."""
    from tests.conftest import read_rows, run_auditor

    plugin = str(ROOT / "tests" / "checks" / "compile" / "plugin_models.py")
    proc = run_auditor("sweep", "--plugin", plugin, "--models",
                       "llama,auditor_compile_ok,auditor_compile_specialize,auditor_compile_crash", "--checks",
                       "compile", "--policies", "fixed,vllm", "--compile-ungated", "--backend", "eager",
                       "--jobs", "2", "--timeout", "600", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = {(r["model_type"], r["policy"]): r for r in read_rows(tmp_path)[1] if r["check"] == "compile"}
    assert rows[("auditor_compile_crash", "vllm")]["status"] == "specialized"
    assert rows[("auditor_compile_crash", "vllm")]["extras"]["failure"] == "crashed"
    assert rows[("auditor_compile_specialize", "vllm")]["extras"]["failure"] == "differed"
    assert rows[("llama", "vllm")]["status"] == "compiled"
    agree = run_auditor("agree", str(tmp_path), "--policies", "fixed,vllm")
    assert agree.returncode == 0, agree.stdout + agree.stderr


def test_vllms_constructor_earlier_in_the_process_leaves_no_hook_behind():
    """A sweep worker runs vLLM's constructor (the backend check's `vllm` rows, the serves check)
    and then the compile check's trial of the next type in one process: the bytecode hook vLLM's
    wrapper registered for the constructed instance made that trial recompile at every length
    (3 graphs, not 1) until the constructor removed it (constructor.classes_restored)."""
    from torch._dynamo import convert_frame

    from auditor.engines.vllm.constructor import construct
    from auditor.models.meta import build_on_meta, make_config

    hooks = len(convert_frame._bytecode_hooks)
    config = make_config("bert")
    construct(config, tuple({type(m): None for m in build_on_meta(config).modules()}))
    assert len(convert_frame._bytecode_hooks) == hooks
    assert run_trial("llama").graphs == 1
