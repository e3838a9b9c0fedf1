"""The shrinker on real default configs: the constraints models assert hold, and the model builds small."""

import pytest

from auditor.models.meta import make_config
from auditor.models.tiny import SIZES, ShrinkError, shrink, tiny_model


def tiny_config(model_type: str, sizes=SIZES):
    """The model type's default config, shrunk."""
    return shrink(make_config(model_type), sizes)


def _built(model_type):
    return tiny_model(make_config(model_type))


def _check_attention(config):
    heads = config.num_attention_heads
    assert config.hidden_size % heads == 0
    assert heads % config.num_key_value_heads == 0


def test_llama_shrinks_every_size_and_derives_head_dim():
    tiny = tiny_config("llama")
    assert (tiny.num_hidden_layers, tiny.hidden_size, tiny.intermediate_size) == (2, 64, 128)
    assert tiny.vocab_size == SIZES.vocab
    assert tiny.head_dim == tiny.hidden_size // tiny.num_attention_heads  # derived again, not 128
    _check_attention(tiny)
    assert tiny.bos_token_id < tiny.vocab_size and tiny.eos_token_id < tiny.vocab_size


def test_the_default_config_is_left_alone():
    config = make_config("llama")
    shrink(config)
    assert config.num_hidden_layers == 32 and config.hidden_size == 4096


def test_tiny_llama_builds_under_a_million_parameters():
    built = _built("llama")
    assert type(built.model).__name__ == "LlamaModel"
    assert built.parameters < 1_000_000
    assert not built.model.training


@pytest.mark.parametrize("model_type", ["qwen2_vl", "qwen2_5_vl"])
def test_mrope_sections_sum_to_half_the_head_dim(model_type):
    text = tiny_config(model_type).text_config
    head_dim = text.hidden_size // text.num_attention_heads
    sections = text.rope_parameters["mrope_section"]
    assert len(sections) == 3 and sum(sections) == head_dim // 2
    assert _built(model_type).parameters < 5_000_000


def test_mixtral_keeps_a_few_experts_and_routes_to_two():
    tiny = tiny_config("mixtral")
    assert tiny.num_local_experts == 4 and tiny.num_experts_per_tok == 2
    _check_attention(tiny)
    assert _built("mixtral").parameters < 1_000_000


def test_deepseek_v3_latent_attention_and_expert_groups_stay_consistent():
    tiny = tiny_config("deepseek_v3")
    assert tiny.qk_rope_head_dim + tiny.qk_nope_head_dim == tiny.qk_head_dim
    assert tiny.n_routed_experts % tiny.n_group == 0 and tiny.topk_group <= tiny.n_group
    assert tiny.first_k_dense_replace < tiny.num_hidden_layers
    assert _built("deepseek_v3").parameters < 5_000_000


def test_whisper_shrinks_both_stacks_and_its_audio_positions():
    tiny = tiny_config("whisper")
    assert tiny.encoder_layers == tiny.decoder_layers == 2
    assert tiny.max_source_positions == SIZES.audio_positions
    assert tiny.d_model % tiny.encoder_attention_heads == 0
    assert tiny.decoder_start_token_id < tiny.vocab_size
    assert _built("whisper").parameters < 1_000_000


def test_t5_keeps_its_explicit_head_dim():
    tiny = tiny_config("t5")
    assert (tiny.num_layers, tiny.num_decoder_layers, tiny.d_model, tiny.d_ff) == (2, 2, 64, 128)
    assert tiny.d_kv * tiny.num_heads == tiny.d_model


def test_llava_moves_the_image_token_inside_the_vocabulary():
    tiny = tiny_config("llava")
    vocab = tiny.text_config.vocab_size
    assert tiny.image_token_index < vocab
    assert tiny.image_token_index not in (tiny.text_config.bos_token_id, tiny.text_config.eos_token_id)
    assert tiny.vision_config.hidden_size == tiny.text_config.hidden_size == 64
    assert -tiny.vision_config.num_hidden_layers <= tiny.vision_feature_layer < tiny.vision_config.num_hidden_layers


def test_gemma3_keeps_one_layer_of_each_kind():
    text = tiny_config("gemma3").text_config
    assert text.layer_types == ["sliding_attention", "full_attention"]
    assert text.num_hidden_layers == len(text.layer_types)


def test_swin_keeps_its_stages_and_shrinks_their_depths():
    tiny = tiny_config("swin")
    assert len(tiny.depths) == 4 and set(tiny.depths) == {1}
    assert all((tiny.embed_dim * 2**i) % heads == 0 for i, heads in enumerate(tiny.num_heads))
    assert tiny.hidden_size == tiny.embed_dim * 2 ** (len(tiny.depths) - 1)  # derived again


def test_heterogeneous_per_layer_overrides_follow_the_kept_layers():
    tiny = tiny_config("dots3_note_text")
    for overrides in tiny.__dict__["_heterogeneity_spec"].per_layer_overrides.values():
        assert all(v <= 64 for v in overrides.values() if isinstance(v, int))
    assert _built("dots3_note_text").parameters < 5_000_000


def test_large_convolutional_stages_get_the_narrow_variant():
    built = _built("efficientnet")
    assert built.parameters < 5_000_000


def test_a_config_its_constructor_rejects_is_a_shrink_error():
    with pytest.raises(ShrinkError, match="rejects its tiny values"):
        tiny_config("fun_asr_nano")  # its adaptor must be exactly a quarter of the text width
