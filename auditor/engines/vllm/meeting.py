"""vLLM meeting a model: its gates in the order vLLM's Transformers backend runs them.

`meet` is the Engine's `meet`: the registry first, then the build (vLLM's own build only where
it may differ from the plain meta build, BuildSettings), then the checks `Base.__init__` makes
on the built model in its order (base.py:185-191), then the version floors, which apply only
to some models and take a feature away rather than the model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping

from auditor.core.status import Failure, Status, classify
from auditor.engines.interface import Outcome, Verdict, safely
from auditor.engines.vllm import build as vllm_build
from auditor.engines.vllm import gates as emulation
from auditor.engines.vllm import plans


def meet(functions: Mapping[str, Callable[..., Verdict]], case, context, config) -> Iterator[tuple[str, Outcome]]:
    """(gate, outcome) in vLLM's order, each gate answered by `functions[gate]`; stops after a
    stopping gate fails. `context`: the case's CaseContext (its plain build and config)."""
    import transformers

    model_cls = None
    if case.remote_code:
        with contextlib.suppress(Exception):
            model_cls = type(context.model())
    registry = functions["registry"](config, case.model_type, model_cls)
    yield "registry", registry.outcome()
    if not registry.ok:
        return
    plain = context.plain_failure()
    own_build = vllm_build.needs_own_build(plain is not None, context.engine_notes("vllm"))
    with contextlib.ExitStack() as stack:
        stack.enter_context(plans.computed_once())  # the gates below share one built model's walks
        try:
            if own_build:
                vllm_config, model = vllm_build.build_like_vllm(config, trust_remote_code=bool(case.remote_code))
            else:
                model = context.model()
                vllm_config = stack.enter_context(vllm_build.patched_in_place(model))
        except Exception as exc:
            yield "build", classify(exc)
            return
        how = "built again under vLLM's settings" if own_build else "the plain meta build stands in for it"
        yield "build", (Status.BUILD, type(model).__name__, {"model_class": type(model).__name__, "own_build": own_build,
                                                              "note": how})
        yield "enable-if", safely(functions["enable-if"], vllm_config)
        yield "pp-plan", safely(functions["pp-plan"], model)
        yield "tp-plan", safely(functions["tp-plan"], model)
        yield "attention", safely(functions["attention"], model, vllm_config)
    installed = transformers.__version__
    video = emulation.has_video_processor(case.model_type) and emulation.is_multimodal(config)
    yield "version:video", _floor(functions["version:video"], video, "video inputs", emulation.VIDEO_FLOOR,
                                  installed, "no video processor")
    yield "version:mtp", _floor(functions["version:mtp"], emulation.has_mtp(config), "MTP", emulation.MTP_FLOOR,
                                installed, "the config sets no num_mtp_layers")


def _floor(version_gate, applies: bool, feature: str, floor: str, installed: str, why_not: str) -> Outcome:
    if not applies:
        return Failure.because(Status.SKIPPED, f"does not apply: {why_not}")
    return version_gate(feature, floor, installed).outcome()
