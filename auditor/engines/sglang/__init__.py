"""SGLang (0.5.23), as the auditor meets it: its Transformers fallback
(sglang/srt/models/transformers.py, chosen with `--model-impl transformers` or when SGLang has no
native implementation; selected in sglang/srt/model_loader/utils.py). Its gates are emulated in
gates.py and modules.py and computed by SGLang's own code in own.py (the `sglang` policy); the
build it makes is build.py, the order it meets a model in meeting.py; its whole answer (the
`serves` check: SGLang's own model loader) serving.py, with the shims it needs here in shims.py.

SGLang has no class compile decorator (it compiles the whole model, `torch.compile` with
dynamo's guards kept), so the engine has no decorator policy: its own-code rows are selected
by `own_policy`, and the checks that decorate leave that policy out. Its rows are
`backend/sglang/<gate>`. Nothing here imports SGLang at import time: only own.py, serving.py and loading.py do, when called.
"""

from __future__ import annotations

from auditor.engines.common import reads_attention
from auditor.engines.interface import BuildSettings, CompileSemantics, Engine, Gate
from auditor.engines.sglang import (
    build,
    gates,
    loading,
    meeting,
    modules,
    own,
    releases,
    running,
    serving,
    tokenizing,
)

ENGINE = Engine(
    name="sglang",
    title="SGLang",
    package="sglang",
    extra="sglang",
    # In the order TransformersBase.__init__ meets them. A one-stage run never splits the
    # pipeline (so pp-plan, asked with two stages, stops nothing even when it raises), and
    # can_enable_torch_compile turns compile off without stopping the model when it answers;
    # when it raises, TransformersBase.__init__ raises with it (transformers.py:662): it stops.
    gates=(
        Gate("registry", stops=True, emulated=gates.registry_gate, own=own.registry_gate,
             cites="resolve_transformers_arch"),
        Gate("attention-backend", stops=True, emulated=gates.attention_backend_gate, own=own.attention_backend_gate,
             cites="attention backend"),
        Gate("build", stops=True, cites="TransformersBase.__init__"),  # the build itself (BuildSettings)
        Gate("embeddings", stops=True, emulated=gates.embeddings_gate, cites="input embeddings"),  # inline in __init__: no function of its own
        Gate("pp-plan", stops=False, emulated=modules.pp_plan_gate, own=own.pp_plan_gate, cites="pipeline_parallel",
             raise_stops=False),
        Gate("tp-plan", stops=True, emulated=modules.tp_plan_gate, own=own.tp_plan_gate, cites="recursive_replace"),
        Gate("attention", stops=True, emulated=modules.attention_gate, own=own.attention_gate,
             cites="_create_attention_instances"),
        Gate("vocab-embed", stops=True, emulated=modules.vocab_embed_gate, own=own.vocab_embed_gate,
             cites="replace_vocab_embed_class"),
        Gate("compile-compatible", stops=False, emulated=gates.compile_gate, own=own.compile_gate,
             cites="can_enable_torch_compile"),
    ),
    meet=meeting.meet,
    # One observer of the plain build for both engines: SGLang's build differs from it where vLLM's may.
    build=BuildSettings(build=build.build_like_sglang, observe=reads_attention),
    own_policy="sglang",
    # Every gate and message here cites SGLang 0.5.23's source (its one record).
    releases=releases.RELEASES,
    prefix="sglang/",
    # With --enable-torch-compile SGLang compiles the whole model's forward,
    # `torch.compile(model.forward, mode=..., dynamic=False)` on CUDA, with dynamo's guards kept (a
    # shape that needs another graph recompiles; compilation/torch_compile_decoration.py:53-62,
    # cache limits raised at :70-82); its Transformers fallback passes position ids, and
    # `_can_torch_compile` (the compile-compatible gate) turns compile off
    # (model_executor/runner/base_runner.py:545-556).
    compile=CompileSemantics("sglang", guards=True, lengths=(7, 13), encoder_sizes=(2, 3), positions=True,
                             gated=True),
    # SGLang's whole answer: its own model loader on each type, as its server builds it with
    # --model-impl transformers (serving.py), on the meta device, its import and one-process group
    # made once per worker.
    serves=serving.outcome,
    # its own loader with load_format=safetensors on meta, fed the headers (loading.py): weights/sglang
    loads_weights=loading.outcome,
    # its own get_tokenizer on the same files as transformers' AutoTokenizer (tokenizing.py): tokenizer/sglang
    tokenizes=tokenizing.load,
    runs=running.run,
    run_paths=running.PATHS,
    head_size=running.head_size,
    shims=serving.shims_in_use,
    warm_up=serving.warm_up,
)
