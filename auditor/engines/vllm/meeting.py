"""vLLM meeting a model: its gates in the order vLLM's Transformers backend runs them.

`meet` is the Engine's `meet`: the registry first, then `Base.__init__`'s steps in its order
(vllm/model_executor/models/transformers/base.py:173-202): the throwaway meta build and the
decoder's decoration (`_decorate_for_torch_compile`, base.py:174; the throwaway build is the
`build` row: vLLM's own build only where it may differ from the plain meta build,
BuildSettings), the build it serves, in whose decorated decoder `can_enable_torch_compile`
runs (base.py:176-180), the weight-name mapper (base.py:183: transformers' conversion
mapping, which raises for no model here), the pipeline split (base.py:185: returns at one
stage; the gate answers for several), the no-op dynamic rope (base.py:187: only relabels),
`recursive_replace` (base.py:189: the tp-plan gate, and the attention fusion the attention
gate reads), `_create_attention_instances` (base.py:191: the attention gate), then the
parameters (base.py:194-197: allocation only); last the version floors, which apply only to
some models and take a feature away rather than the model.

The own-code variant (policy `vllm`) also runs vLLM's whole constructor (`get_model`,
constructor.py) once: where it stops, that gate's row carries vLLM's own exception, whatever
vLLM's pieces said; where it passed a step, the piece's row stands, but never as a stop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping

from auditor.core.classifier import Phase, classify
from auditor.core.messages import signature_of
from auditor.core.status import Failure, Status
from auditor.engines.interface import Outcome, Verdict, passed, remote_model_class, safely
from auditor.engines.vllm import build as vllm_build
from auditor.engines.vllm import gates as emulation
from auditor.engines.vllm import plans
from auditor.engines.vllm.config import as_vllm_reads
from auditor.engines.vllm.releases import followed

# The gates whose step is in Base.__init__, in its order (the rows `constructor.Construction` answers;
# pp-plan answers for several stages, which one-stage construction does not run).
CONSTRUCTOR_GATES = ("build", "decorate", "enable-if", "pp-plan", "tp-plan", "attention")
PACKAGE = "vllm"  # vLLM's import name: its installed code's frames are the engine's
# What vLLM's get_model runs, in order: its ModelConfig's registry, then the constructor.
_ORDER = ("registry", *CONSTRUCTOR_GATES)


def meet(functions: Mapping[str, Callable[..., Verdict]], case, context, config) -> Iterator[tuple[str, Outcome]]:
    """(gate, outcome) in vLLM's order, each gate answered by `functions[gate]`; stops after a
    stopping gate fails. `context`: the case's CaseContext (its plain build and config)."""
    import transformers

    model_cls = remote_model_class(case, context)
    # The own-code variant has vLLM's registry; it runs vLLM's whole constructor too.
    construction = None
    if functions["registry"] is not emulation.registry_gate:
        from auditor.engines.vllm.constructor import construct

        construction = construct(config, _classes(context), trust_remote_code=bool(case.remote_code),
                                 plain_failed=context.plain_failure() is not None)
    registry = _as_constructed("registry", safely(functions["registry"], config, case.model_type, model_cls,
                                                  package=PACKAGE), construction)
    yield "registry", registry
    if not passed(registry):
        return
    # The backend check stops reading after a stopping gate that failed (Engine.stops_at).
    done = set()
    for gate, outcome in _constructor_steps(functions, case, context, config):
        done.add(gate)
        yield gate, _as_constructed(gate, outcome, construction)
    if construction is not None and construction.passed("build", _ORDER):
        # The pieces stopped early (their build failed) where vLLM's constructor went on: its rows.
        for gate in CONSTRUCTOR_GATES:
            if gate not in done:
                yield gate, _as_constructed(gate, Failure.because(Status.SKIPPED, "no model to ask"), construction)
    installed = transformers.__version__
    video = emulation.has_video_processor(case.model_type) and emulation.is_multimodal(config)
    yield "version:video", _floor(functions["version:video"], video, "video inputs", followed().floor("video inputs"),
                                  installed, "no video processor")
    yield "version:mtp", _floor(functions["version:mtp"], emulation.has_mtp(config), "MTP", followed().floor("MTP"),
                                installed, "the config sets no num_mtp_layers")


def _constructor_steps(functions, case, context, config) -> Iterator[tuple[str, Outcome]]:
    plain = context.plain_failure()
    read = as_vllm_reads(config, case.model_type)  # vLLM's own config class, where it has one
    own_build = read is not config or vllm_build.needs_own_build(plain is not None, context.engine_notes("vllm"))
    floor = followed().model_floor(case.model_type)  # a backend class's own check_version, before Base
    if floor is not None:
        import transformers

        outcome = emulation.version_gate(floor[1], floor[0], transformers.__version__).outcome()
        if not passed(outcome):
            yield "build", outcome
            return
    with contextlib.ExitStack() as stack:
        stack.enter_context(plans.computed_once())  # the gates below share one built model's walks
        try:
            if own_build:
                vllm_config, model = vllm_build.build_like_vllm(read, trust_remote_code=bool(case.remote_code))
            else:
                model = context.model()
                vllm_config = stack.enter_context(vllm_build.patched_in_place(model))
        except Exception as exc:
            # Where the plain build fails too, the model fails on its own; where it builds, this is
            # vLLM's setting meeting the model (the fault rule says whose code raised).
            yield "build", classify(exc, Phase.BUILD if plain is not None else Phase.ENGINE, engine_package=PACKAGE)
            return
        how = "built again under vLLM's settings" if own_build else "the plain meta build stands in for it"
        how += f", from vLLM's own {type(read).__name__}" if read is not config else ""
        yield "build", (Status.BUILD, type(model).__name__, {"model_class": type(model).__name__, "own_build": own_build,
                                                              "note": how})
        yield "decorate", safely(functions["decorate"], model, package=PACKAGE)
        yield "enable-if", safely(functions["enable-if"], vllm_config, package=PACKAGE)
        yield "pp-plan", safely(functions["pp-plan"], model, package=PACKAGE)
        yield "tp-plan", safely(functions["tp-plan"], model, package=PACKAGE)
        yield "attention", safely(functions["attention"], model, vllm_config, package=PACKAGE)


def _classes(context) -> tuple[type, ...]:
    """The classes of the plain meta build (the decoder's among them), which vLLM's constructor
    may change for good; none where the plain build failed."""
    if context.plain_failure() is not None:
        return ()
    model = context.model()
    return tuple({type(m): None for m in model.modules()})


def _as_constructed(gate: str, outcome: Outcome, construction) -> Outcome:
    """A gate's row in the own-code variant, held to what vLLM's constructor did (see the
    module's docstring); the emulation's rows (construction None) as they are."""
    if construction is None:
        return outcome
    note = {"constructor": construction.served or construction.environment or f"stops at {construction.gate}",
            **({"shims": list(construction.shims)} if construction.shims else {}),
            **({"inspected_in_process": list(construction.inspected_in_process)}
               if construction.inspected_in_process else {})}
    if construction.gate == gate:
        return Failure(construction.status, construction.message, signature_of(construction.message),
                       construction.fault, {**note, "step": construction.step})
    if construction.passed(gate, _ORDER) and not passed(outcome) and gate != "pp-plan":
        piece = outcome.message if isinstance(outcome, Failure) else outcome[1]
        return Status.BUILD, "vLLM's constructor passes this step", {**note, "piece": piece}
    if isinstance(outcome, Failure):
        return outcome
    status, message, extras = outcome
    return status, message, {**extras, **note}


def _floor(version_gate, applies: bool, feature: str, floor: str, installed: str, why_not: str) -> Outcome:
    if not applies:
        return Failure.because(Status.SKIPPED, f"does not apply: {why_not}")
    return version_gate(feature, floor, installed).outcome()
