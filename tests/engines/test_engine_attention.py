"""The engine's attention (auditor/engines/vllm/engine_attention.py): one opaque op to dynamo, and exact.

Exact against transformers' own functions on random tensors (sdpa_attention_forward; gemma2's and
gpt_oss's and inkling2's eager functions for softcap, sinks and eager's causal rule; dots3_note's masking of sparse
indices), and against each model's default attention on real tiny models whose attention calls differ
(llama, gpt2, gptj, gemma2 with softcap, gpt_oss with sinks, dots3_note_text with sparse indices,
qwen2 with a sliding window that bites); a committed model whose layers never look the registry up is left alone.
"""

import pytest
import torch
import transformers

from auditor.checks.compile_trial import compare
from auditor.engines.vllm import engine_attention as ea
from auditor.models.inputs import decoder_inputs
from auditor.models.meta import make_config
from auditor.models.tiny import build_tiny, shrink, tiny_model

OP = torch.ops.auditor.attention.default


class Recording:
    """A torch.compile backend that keeps the graphs dynamo hands it and runs them as they are."""

    def __init__(self):
        self.graphs = []

    def __call__(self, graph_module, example_inputs):
        self.graphs.append(graph_module)
        return graph_module.forward

    def targets(self):
        return [node.target for graph in self.graphs for node in graph.graph.nodes if node.op == "call_function"]


def _qkv(batch=1, heads=4, kv_heads=2, q_length=7, kv_length=7, dim=16, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, heads, q_length, dim, generator=generator),
            torch.randn(batch, kv_heads, kv_length, dim, generator=generator),
            torch.randn(batch, kv_heads, kv_length, dim, generator=generator))


def _module(heads=4, kv_heads=2, **attributes):
    module = torch.nn.Module()
    module.num_key_value_groups, module.is_causal, module.head_dim = heads // kv_heads, True, 16
    for name, value in attributes.items():
        setattr(module, name, value)
    return module


def test_the_op_is_one_node_to_dynamo():
    module, (q, k, v) = _module(), _qkv()
    backend = Recording()

    def attend(q, k, v):
        return ea.engine_attention_forward(module, q, k, v, None, scaling=0.25)[0] * 2

    compiled = torch.compile(attend, backend=backend, fullgraph=True)
    assert torch.equal(compiled(q, k, v), attend(q, k, v))
    assert len(backend.graphs) == 1
    assert backend.targets().count(OP) == 1
    assert "scaled_dot_product_attention" not in str(backend.targets())  # not traced into


def test_one_graph_serves_every_length():
    module, backend = _module(), Recording()
    compiled = torch.compile(lambda q, k, v: ea.engine_attention_forward(module, q, k, v, None)[0],
                             backend=backend, fullgraph=True, dynamic=True)
    for length in (7, 13, 29):
        q, k, v = _qkv(q_length=length, kv_length=length)
        torch.testing.assert_close(compiled(q, k, v), ea.engine_attention_forward(module, q, k, v, None)[0])
    assert len(backend.graphs) == 1  # the fake implementation's shapes are symbolic


def test_a_graph_break_inside_the_op_does_not_break_the_graph(monkeypatch):
    real = ea._attention
    broke = []

    def breaking(*args):
        torch._dynamo.graph_break()  # would stop fullgraph=True anywhere dynamo traces
        broke.append(True)
        return real(*args)

    monkeypatch.setattr(ea, "_attention", breaking)
    module, (q, k, v) = _module(), _qkv()
    backend = Recording()
    compiled = torch.compile(lambda q, k, v: ea.engine_attention_forward(module, q, k, v, None)[0],
                             backend=backend, fullgraph=True)
    compiled(q, k, v)
    assert broke and len(backend.graphs) == 1 and backend.targets() == [OP]
    with pytest.raises(torch._dynamo.exc.Unsupported):  # the same break outside the op does break it
        torch.compile(lambda q, k, v: breaking(q, k, v, None, 1.0, True, 0, 0.0, None), backend="eager",
                      fullgraph=True)(q, k, v)


@pytest.mark.parametrize("case", ["causal", "bool mask", "float mask", "no scaling", "longer kv", "cross",
                                  "position bias", "one query"])
def test_the_function_returns_what_sdpa_returns(case):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    q, k, v = _qkv(kv_length=9 if case in ("longer kv", "cross") else 7, q_length=1 if case == "one query" else 7)
    module = _module(is_causal=case != "cross")
    mask, kwargs = None, {"scaling": None if case == "no scaling" else 0.3}
    if case == "bool mask":
        mask = torch.rand(1, 1, 7, 7, generator=torch.Generator().manual_seed(1)) > 0.3
        mask[..., 0] = True  # every query sees a key
    elif case == "float mask":
        mask = torch.randn(1, 4, 7, 7, generator=torch.Generator().manual_seed(2))
    elif case == "position bias":
        kwargs["position_bias"] = torch.randn(1, 4, 7, 7, generator=torch.Generator().manual_seed(3))
    expected = sdpa_attention_forward(module, q, k, v, mask, **kwargs)[0]
    actual, weights = ea.engine_attention_forward(module, q, k, v, mask, **kwargs)
    assert weights is None and actual.shape == expected.shape
    torch.testing.assert_close(actual, expected)


def test_softcap_and_sinks_are_what_the_models_eager_functions_compute():
    from transformers.masking_utils import causal_mask_function, eager_mask
    from transformers.models.gemma2.modeling_gemma2 import eager_attention_forward as gemma2_eager
    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward as gpt_oss_eager

    q, k, v = (x * 8 for x in _qkv())  # large scores, so that the cap bites
    additive = eager_mask(batch_size=1, q_length=7, kv_length=7, mask_function=causal_mask_function)
    gemma = gemma2_eager(_module(), q, k, v, additive, scaling=0.25, softcap=5.0)[0]
    torch.testing.assert_close(ea.engine_attention_forward(_module(), q, k, v, None, scaling=0.25, softcap=5.0)[0],
                               gemma)
    assert not torch.allclose(ea.engine_attention_forward(_module(), q, k, v, None, scaling=0.25)[0], gemma)
    sinks = torch.randn(4, generator=torch.Generator().manual_seed(4)) * 4
    expected = gpt_oss_eager(_module(sinks=sinks), q, k, v, additive, scaling=0.25)[0]
    torch.testing.assert_close(ea.engine_attention_forward(_module(), q, k, v, None, scaling=0.25, s_aux=sinks)[0],
                               expected)


def test_per_token_sinks_with_a_position_bias_are_what_inkling2s_eager_function_computes():
    from transformers.masking_utils import causal_mask_function, eager_mask
    eager_attention_forward = pytest.importorskip(
        "transformers.models.inkling2.modeling_inkling2", reason="this transformers has no inkling2").eager_attention_forward

    q, k, v = _qkv()
    generator = torch.Generator().manual_seed(5)
    sinks, bias = torch.randn(1, 4, 7, 1, generator=generator) * 4, torch.randn(1, 4, 7, 7, generator=generator)
    additive = eager_mask(batch_size=1, q_length=7, kv_length=7, mask_function=causal_mask_function)
    expected = eager_attention_forward(_module(), q, k, v, additive, scaling=0.25, position_bias=bias, sinks=sinks)[0]
    actual = ea.engine_attention_eager_forward(_module(), q, k, v, additive, scaling=0.25, position_bias=bias,
                                               sinks=sinks)[0]
    torch.testing.assert_close(actual, expected)


def _outputs(model, lengths=(7, 13)):
    with torch.no_grad():
        return [model(**decoder_inputs(model, n)) for n in lengths]


def _engine_outputs(model, masks=True):
    calls = []
    real = ea.attention_op

    def counted(*args):
        calls.append(True)
        return real(*args)

    with pytest.MonkeyPatch.context() as patch:  # counts the op's calls; the op itself runs
        patch.setattr(ea, "attention_op", counted)
        default = model.config.get_text_config()._attn_implementation
        with ea.engine_attention(model, masks) as switched:
            assert switched
            assert model.config.get_text_config()._attn_implementation == (
                ea.ENGINE_ATTENTION_UNMASKED if not masks
                else ea.ENGINE_ATTENTION_EAGER_MASKS if default == "eager" else ea.ENGINE_ATTENTION)
            outputs = _outputs(model)
    assert calls, "the model never called the engine's attention"
    return outputs


def _assert_exact(expected, actual):
    for a, b in zip(expected, actual, strict=True):
        diff, tolerance = compare(a, b)
        assert diff <= tolerance, f"differs by {diff} (tolerance {tolerance})"


@pytest.mark.parametrize("model_type", ["llama", "gpt2", "gptj", "gemma2", "gpt_oss", "dots3_note_text"])
def test_exact_on_real_tiny_models(model_type):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if model_type not in CONFIG_MAPPING_NAMES:
        pytest.skip(f"transformers {transformers.__version__} has no {model_type}")
    model = tiny_model(make_config(model_type)).model
    if not ea.dispatches_attention(model):  # e.g. gptj before transformers 5.2x: its own attention, no interface
        pytest.skip(f"{model_type}'s attention in transformers {transformers.__version__} does not look up "
                    "ALL_ATTENTION_FUNCTIONS: the engine's attention cannot replace it (engine_attention says so)")
    before = model.config._attn_implementation
    _assert_exact(_outputs(model), _engine_outputs(model))
    assert model.config._attn_implementation == before  # put back on leaving the block


@pytest.mark.parametrize("masks", [True, False])
def test_exact_where_the_sliding_window_bites(masks):
    config = shrink(make_config("qwen2"))
    config.use_sliding_window, config.sliding_window = True, 4
    config.layer_types = ["sliding_attention"] * config.num_hidden_layers
    model = build_tiny(config)
    windowed = _outputs(model)
    # masks built: the window is in the mask; skipped, as vLLM skips them: the op makes the window
    _assert_exact(windowed, _engine_outputs(model, masks))
    model.config.sliding_window = 1000
    assert compare(windowed[1], _outputs(model)[1])[0] > 1e-3  # and the window does change the output


def test_the_eager_variant_is_causal_only_through_the_mask():
    from transformers.models.gemma2.modeling_gemma2 import eager_attention_forward

    q, k, v = _qkv()
    module = _module()  # is_causal, as bridgetower's cross-modal layers say, which get no mask
    expected = eager_attention_forward(module, q, k, v, None, scaling=0.25)[0]
    torch.testing.assert_close(ea.engine_attention_eager_forward(module, q, k, v, None, scaling=0.25,
                                                                 is_causal=True)[0], expected)
    assert not torch.allclose(ea.engine_attention_forward(module, q, k, v, None, scaling=0.25)[0], expected)


def test_sparse_indices_limit_the_keys_as_the_models_do_for_sdpa():
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    q, k, v = _qkv()
    indices = torch.tensor([[[0, 0], [0, 1], [1, 2], [0, 3], [2, 4], [3, 5], [1, 6]]], dtype=torch.int32)
    mask = torch.ones(7, 7, dtype=torch.bool).tril()[None, None]
    # dots3_note's own masking for eager and sdpa (modeling_dots3_note.py, its attention's forward)
    dropped = torch.ones(1, 7, 7, dtype=torch.bool).scatter(-1, indices.long(), False).unsqueeze(1)
    expected = sdpa_attention_forward(_module(), q, k, v, mask & ~dropped, scaling=0.25)[0]
    torch.testing.assert_close(ea.engine_attention_forward(_module(), q, k, v, mask, scaling=0.25,
                                                           indices=indices)[0], expected)


def test_block_sparse_indices_are_refused_not_ignored():
    q, k, v = _qkv()
    with pytest.raises(NotImplementedError, match="block_indices"):
        ea.engine_attention_forward(_module(), q, k, v, None, block_indices=torch.zeros(1, 2, 7, 1))


def test_without_masks_the_op_makes_the_causal_pattern_as_vllm_skips_the_masks():
    model = tiny_model(make_config("llama")).model
    _assert_exact(_outputs(model), _engine_outputs(model, masks=False))


def test_a_model_that_never_looks_the_registry_up_is_left_alone():
    # A committed model whose layers never look ALL_ATTENTION_FUNCTIONS up (tests/plugins): falcon was
    # this test's model until transformers 5.25.0 moved it onto the interface, a finding of that release
    # that turned this test red; a fixture of the project's own cannot drift with a release.
    from transformers import AutoConfig, AutoModel

    import tests.plugins.backend_models  # noqa: F401  (registers the auditor_backend_* types)

    model = AutoModel.from_config(AutoConfig.for_model("auditor_backend_no_attention"))
    before = model.config._attn_implementation
    assert not ea.dispatches_attention(model)
    with ea.engine_attention(model) as switched:
        assert not switched and model.config._attn_implementation == before


def test_a_model_that_looks_the_registry_up_is_switched():
    # The control beside it, from the same fixture: a layer that dispatches through the interface.
    from transformers import AutoConfig, AutoModel

    import tests.plugins.backend_models  # noqa: F401

    model = AutoModel.from_config(AutoConfig.for_model("auditor_backend_ok"))
    before = model.config._attn_implementation
    assert ea.dispatches_attention(model)
    with ea.engine_attention(model) as switched:
        assert switched and model.config._attn_implementation != before
    assert model.config._attn_implementation == before


def test_a_compiled_tiny_llama_calls_the_op_once_a_layer():
    model = tiny_model(make_config("llama")).model
    expected = _outputs(model, (7,))[0]
    backend = Recording()
    with ea.engine_attention(model), torch.no_grad():
        actual = torch.compile(model, backend=backend, fullgraph=True)(**decoder_inputs(model, 7))
    assert backend.targets().count(OP) == model.config.num_hidden_layers
    _assert_exact([expected], [actual])
