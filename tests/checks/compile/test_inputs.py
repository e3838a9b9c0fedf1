"""Input synthesis from a model's main input name and its config."""

import pytest
import torch

from auditor.models.inputs import (
    ENCODER_LENGTH,
    CannotFeed,
    decoder_inputs,
    encoder_inputs,
    special_token_ids,
)
from auditor.models.meta import make_config
from auditor.models.tiny import tiny_model


@pytest.fixture(scope="module")
def llava():
    return tiny_model(make_config("llava")).model


def test_token_ids_stay_in_the_vocabulary_and_away_from_special_tokens(llava):
    config = llava.config
    inputs = decoder_inputs(llava, 13)
    ids = inputs["input_ids"]
    assert ids.shape == (1, 13) and ids.dtype == torch.long
    assert int(ids.max()) < config.text_config.vocab_size
    assert not set(ids.flatten().tolist()) & set(special_token_ids(config))
    assert config.image_token_index in set(special_token_ids(config))


def test_a_decoder_is_fed_as_a_serving_engine_feeds_it(llava):
    llama = tiny_model(make_config("llama")).model
    inputs = decoder_inputs(llama, 7)
    assert set(inputs) == {"input_ids", "use_cache"} and inputs["use_cache"] is False
    assert set(decoder_inputs(llava, 7)) == {"input_ids"}  # its forward does not name use_cache
    full = decoder_inputs(llava, 7, with_mask=True, with_positions=True)
    assert full["attention_mask"].shape == (1, 7) and full["position_ids"].tolist() == [list(range(7))]
    with torch.no_grad():
        assert llava(**full).last_hidden_state.shape[:2] == (1, 7)


def test_the_same_seed_gives_the_same_inputs(llava):
    assert torch.equal(decoder_inputs(llava, 9)["input_ids"], decoder_inputs(llava, 9)["input_ids"])


def test_an_encoder_decoder_gets_a_fixed_encoder_input_and_a_decoder_of_the_length():
    t5 = tiny_model(make_config("t5")).model
    inputs = decoder_inputs(t5, 13)
    assert inputs["input_ids"].shape == (1, ENCODER_LENGTH)
    assert inputs["decoder_input_ids"].shape == (1, 13)
    assert torch.equal(inputs["input_ids"], decoder_inputs(t5, 7)["input_ids"])


def test_whisper_gets_log_mel_features_as_long_as_its_positions_allow():
    whisper = tiny_model(make_config("whisper")).model
    config = whisper.config
    inputs = decoder_inputs(whisper, 7)
    assert inputs["input_features"].shape == (1, config.num_mel_bins, 2 * config.max_source_positions)
    with torch.no_grad():
        assert whisper(**inputs).last_hidden_state.shape[:2] == (1, 7)


def test_speech_to_text_gets_frames_by_features():
    model = tiny_model(make_config("speech_to_text")).model
    features = decoder_inputs(model, 7)["input_features"]
    assert features.shape[-1] == model.config.input_feat_per_channel * model.config.input_channels


def test_a_vision_model_has_no_tokens_to_feed():
    vit = tiny_model(make_config("vit")).model
    with pytest.raises(CannotFeed, match="main input is 'pixel_values'"):
        decoder_inputs(vit, 7)


def test_a_vision_encoder_gets_images_of_its_size(llava):
    encoder = llava.get_encoder(modality="image")
    inputs = encoder_inputs(encoder, 2)
    vision = llava.config.vision_config
    assert inputs["pixel_values"].shape == (2, vision.num_channels, vision.image_size, vision.image_size)
    with torch.no_grad():
        encoder(**inputs)


def test_a_qwen_vision_encoder_gets_flattened_patches_and_their_grid():
    model = tiny_model(make_config("qwen2_vl")).model
    encoder = model.get_encoder(modality="image")
    inputs = encoder_inputs(encoder, 3)
    assert inputs["grid_thw"].shape == (3, 3)
    assert inputs["hidden_states"].shape[0] == int(inputs["grid_thw"].prod(-1).sum())
    with torch.no_grad():
        encoder(**inputs)


def test_a_whole_model_is_fed_by_its_main_input_and_the_input_is_named():
    from auditor.models.inputs import CannotFeed, main_inputs

    vit = tiny_model(make_config("vit")).model
    inputs, described = main_inputs(vit, 64)
    assert set(inputs) == {"pixel_values"} and described.startswith("seeded pixel_values 1x3x")
    with torch.no_grad():
        assert vit(**inputs).last_hidden_state.shape[0] == 1
    llama = tiny_model(make_config("llama")).model
    assert main_inputs(llama, 64)[1] == "64 seeded tokens (seed 0)"
    oneformer = tiny_model(make_config("oneformer")).model  # its main input is a list of two
    with pytest.raises(CannotFeed, match=r"main input is \['pixel_values', 'task_inputs'\]"):
        main_inputs(oneformer, 64)
