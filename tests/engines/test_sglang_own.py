"""SGLang's own gate functions (auditor.engines.sglang.own, the `sglang` policy) against the
emulation, on real transformers types, in process: the same gates in the same order with the same
statuses, and the same refusal messages. Needs SGLang (the nox session `sglang` installs 0.5.23 and
runs these tests, then the whole sweep and `auditor agree`)."""

from __future__ import annotations

import pytest

pytest.importorskip("sglang", reason="SGLang is not installed (pip install 'model-sweep-auditor[sglang]'): its own "
                                     "gate functions need it (the nox session `sglang` runs these tests)")

pytestmark = pytest.mark.slow  # importing SGLang's Transformers fallback takes a while

from auditor import engines  # noqa: E402
from auditor.checks.interface import CaseContext, Options  # noqa: E402
from auditor.core.messages import without_place  # noqa: E402
from auditor.core.status import Failure  # noqa: E402
from auditor.models.cases import ModelCase  # noqa: E402

SGLANG = engines.get("sglang")
# A type SGLang takes, one per stopping gate the sweep showed, a MoE and a hybrid.
TYPES = ("llama", "bloom", "mixtral", "granitemoehybrid", "bert", "qwen2_vl", "sam2", "longcat_flash")


def _verdicts(model_type: str, own: bool) -> list[tuple[str, str, str]]:
    """(gate, status, message) as far as SGLang gets, by its own code or by the emulation."""
    context = CaseContext(ModelCase(model_type), Options(policies=("fixed", "sglang"), checks=("backend",)))
    found = []
    gates = SGLANG.outcomes(own, ModelCase(model_type), context, context.config())
    for gate, outcome in gates:
        status, message = ((outcome.status, outcome.message) if isinstance(outcome, Failure)
                           else (outcome[0], outcome[1]))
        # SGLang's own code adds where in its files it raised; the emulation's copy, nothing.
        found.append((gate, status.value, without_place(message) if not status.ok else ""))
        if SGLANG.stops_at(gate, outcome):
            break
    gates.close()
    return found


@pytest.mark.parametrize("model_type", [t for t in TYPES if t in __import__("transformers").models.auto
                                        .modeling_auto.MODEL_MAPPING_NAMES])
def test_sglangs_own_code_agrees_with_the_emulation(model_type):
    assert _verdicts(model_type, own=True) == _verdicts(model_type, own=False)


def test_llama_passes_sglangs_own_gates():
    verdicts = _verdicts("llama", own=True)
    assert [gate for gate, _, _ in verdicts] == list(SGLANG.gate_names)
    assert all(status == "build" for _, status, _ in verdicts)


def test_sglangs_own_pipeline_split_leaves_the_shared_build_as_it_was():
    from auditor.engines.sglang import own
    from auditor.engines.sglang.gates import text_config
    from auditor.models.meta import build_on_meta, make_config

    config = make_config("llama")
    model = build_on_meta(config)
    before = [(name, type(module)) for name, module in model.named_modules()]
    assert own.pp_plan_gate(model, text_config(config)).ok
    assert own.tp_plan_gate(model, config, text_config(config), False).ok
    assert own.vocab_embed_gate(model, text_config(config), 32000).ok
    assert [(name, type(module)) for name, module in model.named_modules()] == before
