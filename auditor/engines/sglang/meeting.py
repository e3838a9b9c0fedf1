"""SGLang meeting a model: its gates in the order its Transformers fallback runs them.

`meet` is the Engine's `meet`: the model class SGLang resolves (sglang/srt/model_loader/utils.py:
198-239, `resolve_transformers_arch`), then TransformersBase.__init__ in its order
(sglang/srt/models/transformers.py:566-662): the `_supports_attention_backend` refusal, the
build, the input embeddings and layer count it reads, `pipeline_parallel`, `recursive_replace`
(MoEMixin's first for a MoE class), `_create_attention_instances`, `replace_vocab_embed_class`,
and `can_enable_torch_compile`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping

from auditor.core.classifier import Phase, classify
from auditor.core.status import Status
from auditor.engines.common import needs_own_build
from auditor.engines.interface import Outcome, Verdict, passed, remote_model_class, safely
from auditor.engines.sglang import build as sglang_build
from auditor.engines.sglang.gates import sglang_config, text_config

PACKAGE = "sglang"  # SGLang's import name: its installed code's frames are the engine's


def meet(functions: Mapping[str, Callable[..., Verdict]], case, context, config) -> Iterator[tuple[str, Outcome]]:
    """(gate, outcome) in SGLang's order, each gate answered by `functions[gate]`; stops after a
    stopping gate fails. `context`: the case's CaseContext (its plain build and config)."""
    model_cls = remote_model_class(case, context)
    own_config = sglang_config(config, case.model_type)
    registry = safely(functions["registry"], own_config, model_cls, package=PACKAGE)
    yield "registry", registry
    if not passed(registry):
        return
    backend = registry[2].get("backend_class", "")
    text = text_config(own_config)
    yield "attention-backend", safely(functions["attention-backend"], own_config, model_cls, package=PACKAGE)
    plain = context.plain_failure()
    own_build = needs_own_build(plain is not None, context.engine_notes("sglang"))
    with contextlib.ExitStack() as stack:
        try:
            if own_build:
                _, model = sglang_build.build_like_sglang(own_config)
            else:
                model = context.model()
                stack.enter_context(sglang_build.patched_in_place(model))
        except Exception as exc:
            # As vLLM's build row: the model's own failure where the plain build fails too.
            yield "build", classify(exc, Phase.BUILD if plain is not None else Phase.ENGINE, engine_package=PACKAGE)
            return
        how = "built again under SGLang's settings" if own_build else "the plain meta build stands in for it"
        yield "build", (Status.BUILD, type(model).__name__, {"model_class": type(model).__name__,
                                                              "own_build": own_build, "note": how})
        embeddings = safely(functions["embeddings"], model, text, package=PACKAGE)
        yield "embeddings", embeddings
        if not isinstance(embeddings, tuple) or not embeddings[0].ok:
            return
        yield "pp-plan", safely(functions["pp-plan"], model, text, package=PACKAGE)
        yield "tp-plan", safely(functions["tp-plan"], model, own_config, text, "MoE" in backend, package=PACKAGE)
        yield "attention", safely(functions["attention"], model, own_config, text, embeddings[2]["layers"], package=PACKAGE)
        yield "vocab-embed", safely(functions["vocab-embed"], model, text, embeddings[2]["vocab_size"], package=PACKAGE)
    yield "compile-compatible", safely(functions["compile-compatible"], own_config, package=PACKAGE)
