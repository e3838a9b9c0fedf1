"""Where vLLM's constructor stopped, read off a traceback (auditor.engines.vllm.constructor.gate_of).
The frames are written here as vLLM 0.33.0's get_model leaves them (their files and functions, as
the nox session `vllm` sees them on real types in tests/engines/test_vllm_constructor.py): vLLM is
not installed in the main suite's environment."""

from traceback import FrameSummary

from auditor.engines.vllm.constructor import gate_of

SITE = "/venv/lib/python3.11/site-packages/vllm/model_executor/"
BASE = SITE + "models/transformers/base.py"
LOADER = [FrameSummary(SITE + "model_loader/__init__.py", 141, "get_model"),
          FrameSummary(SITE + "model_loader/utils.py", 101, "initialize_model")]


def _frames(*rest):
    return [*LOADER, *(FrameSummary(*frame) for frame in rest)]


def test_the_step_base_init_was_in_names_the_gate():
    assert gate_of(_frames((BASE, 174, "__init__"), (BASE, 298, "_decorate_for_torch_compile"))) == (
        "decorate", "base.py:174 _decorate_for_torch_compile")
    assert gate_of(_frames((BASE, 191, "__init__"), (BASE, 651, "_create_attention_instances"))) == (
        "attention", "base.py:191 _create_attention_instances")
    assert gate_of(_frames((BASE, 189, "__init__"), (BASE, 597, "recursive_replace"))) == (
        "tp-plan", "base.py:189 recursive_replace")


def test_a_deeper_function_moves_the_step_to_its_gate():
    # The duplicate attention layer is raised in recursive_replace's register_fusion (base.py:515-530);
    # enable_if runs in the decorated decoder's __init__ while the model is built (base.py:180).
    assert gate_of(_frames((BASE, 189, "__init__"), (BASE, 597, "recursive_replace"),
                           (BASE, 584, "_recursive_replace"), (BASE, 525, "register_fusion")))[0] == "attention"
    assert gate_of(_frames((BASE, 180, "__init__"), (BASE, 233, "_create_model"),
                           (SITE + "models/transformers/utils.py", 380, "can_enable_torch_compile")))[0] == "enable-if"


def test_outside_the_constructor_is_no_gate_and_a_mixins_init_is_the_last():
    after = [*LOADER[:1], FrameSummary(SITE + "model_loader/base_loader.py", 109, "load_model"),
             FrameSummary(SITE + "model_loader/utils.py", 186, "process_weights_after_loading")]
    assert gate_of(after) is None
    assert gate_of(_frames((SITE + "models/transformers/pooling.py", 60, "__init__"))) == (
        "attention", "pooling.py:60 __init__")
