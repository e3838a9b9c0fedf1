"""Inputs for a model's forward, made up from its `main_input_name` and its config.

`decoder_inputs(model, length)` feeds a whole model so that its decoder sees `length` tokens,
the way a serving engine calls it: token ids (drawn inside the vocabulary, away from every
special token id of the config, such as image tokens), no attention mask, no cache. An
encoder-decoder model also gets a fixed encoder input (token ids, audio features or pixels), so
that only the decoder's length changes between two calls. `decoder_feeds(model, lengths)` adds
the other ways to feed the same model, for the caller to try in order when the first fails: audio
features in the other layout, then the media inputs its forward also takes (a contrastive model
needs pixels with its text). `encoder_inputs(encoder, size)` feeds an encoder component (a vision
or audio tower) on its own, with `size` images or clips. They raise CannotFeed, with the
reason, for a model they do not know how to feed.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

ENCODER_LENGTH = 11  # tokens of an encoder-decoder's fixed encoder input; never a decoder length
IMAGE_SIZE = 32  # pixels of a synthesized image when the config does not say
WAVEFORM = 4000  # samples of a waveform input: a quarter second at 16 kHz, past wav2vec2's conv stack


class CannotFeed(ValueError):
    """The synthesizer does not know how to make this model's inputs."""


def decoder_inputs(model, length: int, *, device: str = "cpu", seed: int = 0,
                   with_mask: bool = False, with_positions: bool = False) -> dict[str, Any]:
    """Keyword arguments for `model(**inputs)` whose decoder part is `length` tokens long."""
    import torch

    config = model.config
    params = _parameters(model.forward)
    main = getattr(model, "main_input_name", "input_ids")
    generator = torch.Generator().manual_seed(seed)
    inputs: dict[str, Any] = {}
    encoder_decoder = "decoder_input_ids" in params
    if encoder_decoder:
        inputs.update(_encoder_side(model, main, params, generator))
        inputs["decoder_input_ids"] = token_ids(config, length, generator)
    elif "input_ids" in params and main == "input_ids":
        inputs["input_ids"] = token_ids(config, length, generator)
    else:
        raise CannotFeed(f"{type(model).__name__} is fed no token ids: its main input is {main!r}")
    text_key = "decoder_input_ids" if encoder_decoder else "input_ids"
    if with_mask:
        mask_key = "decoder_attention_mask" if encoder_decoder else "attention_mask"
        if mask_key in params:
            inputs[mask_key] = torch.ones_like(inputs[text_key])
    if with_positions and "position_ids" in params:
        inputs["position_ids"] = torch.arange(length)[None]
    if "use_cache" in params:
        inputs["use_cache"] = False
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def main_inputs(model, length: int, *, seed: int = 0) -> tuple[dict[str, Any], str]:
    """One seeded input for a whole model by its main input, and its description: `length` token
    ids where it takes them (`decoder_inputs`), else pixel values, log-mel features or a waveform
    (WAVEFORM samples) of the sizes its config names. CannotFeed for any other main input."""
    import torch

    try:
        return decoder_inputs(model, length, seed=seed), f"{length} seeded tokens (seed {seed})"
    except CannotFeed:
        pass
    main = getattr(model, "main_input_name", "")
    generator = torch.Generator().manual_seed(seed)
    makers = {"pixel_values": lambda: pixel_values(model.config, 1, generator),
              "input_features": lambda: audio_features(model.config, 1, generator),
              "input_values": lambda: torch.randn(1, WAVEFORM, generator=generator)}
    if not isinstance(main, str) or main not in makers or main not in _parameters(model.forward):  # oneformer's: a list
        raise CannotFeed(f"{type(model).__name__} is fed neither token ids nor pixel values, audio features "
                         f"or a waveform: its main input is {main!r}")
    value = makers[main]()
    return {main: value}, f"seeded {main} {'x'.join(map(str, value.shape))} (seed {seed})"


def decoder_feeds(model, lengths, *, device: str = "cpu", seed: int = 0,
                  positions: bool = False) -> list[list[dict[str, Any]]]:
    """Ways to feed `model` at each of `lengths`, the serving engine's first; each way is one feed
    per length, and only the decoder's tokens (and, with `positions`, their position ids) differ
    between them."""
    base = [decoder_inputs(model, n, device=device, seed=seed, with_positions=positions) for n in lengths]
    return [base, *([{**feed, **extra} for feed in base] for extra in _other_inputs(model, base[0], device))]


def _other_inputs(model, feed: dict[str, Any], device: str) -> list[dict[str, Any]]:
    import torch

    params = _parameters(model.forward)
    generator = torch.Generator().manual_seed(1)
    found: list[dict[str, Any]] = []
    features = feed.get("input_features")
    if isinstance(features, torch.Tensor) and features.ndim == 3:
        found.append({"input_features": features.transpose(1, 2).contiguous()})
    media: dict[str, Any] = {}
    for name, make in (("pixel_values", lambda: pixel_values(model.config, 1, generator)),
                       ("input_features", lambda: audio_features(model.config, 1, generator)),
                       ("input_ids", lambda: token_ids(model.config, ENCODER_LENGTH, generator))):
        if name in params and name not in feed:
            try:
                media[name] = make().to(device)
            except CannotFeed:
                continue
    if media:
        found.append(media)
    return found


def encoder_inputs(encoder, size: int, *, device: str = "cpu", seed: int = 0) -> dict[str, Any]:
    """Keyword arguments for an encoder component fed `size` images (or audio clips)."""
    import torch

    config = encoder.config
    params = _parameters(encoder.forward)
    generator = torch.Generator().manual_seed(seed)
    if "grid_thw" in params:  # Qwen-VL style: patches flattened, with their grid
        inputs = _patch_grid(config, size, generator)
    elif "pixel_values" in params:
        inputs = {"pixel_values": pixel_values(config, size, generator)}
    elif "input_features" in params:
        inputs = {"input_features": audio_features(config, size, generator)}
    elif "input_values" in params:
        inputs = {"input_values": torch.randn(size, 1600, generator=generator)}
    else:
        raise CannotFeed(f"{type(encoder).__name__}.forward takes no pixels or audio features")
    return {k: v.to(device) for k, v in inputs.items()}


def token_ids(config, length: int, generator, batch: int = 1):
    """`batch` x `length` ids inside the text vocabulary that are no special token of the config."""
    import torch

    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    vocab = getattr(text, "vocab_size", None) or getattr(config, "vocab_size", None)
    if not isinstance(vocab, int) or vocab < 2:
        raise CannotFeed(f"{type(config).__name__} has no usable vocab_size ({vocab!r})")
    special = set(special_token_ids(config))
    allowed = [i for i in range(min(vocab, 4096)) if i not in special]
    if not allowed:
        raise CannotFeed(f"every id of the vocabulary ({vocab}) is a special token")
    allowed = allowed[min(3, len(allowed) - 1):]  # leave out pad/bos/eos-like low ids where possible
    picks = torch.randint(len(allowed), (batch, length), generator=generator)
    return torch.tensor(allowed)[picks]


def special_token_ids(config) -> Iterator[int]:
    """Every `*_token_id`, `*_token_index` or `*_token_ids` value in the config and its sub-configs."""
    from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

    for name, value in config.__dict__.items():
        if isinstance(value, PreTrainedConfig):
            yield from special_token_ids(value)
        elif name.endswith(("_token_id", "_token_index", "_token_ids", "_token_id_list")):
            values = value if isinstance(value, (list, tuple)) else [value]
            yield from (v for v in values if isinstance(v, int) and not isinstance(v, bool))


def pixel_values(config, batch: int, generator):
    import torch

    vision = getattr(config, "vision_config", None) or config
    channels = getattr(vision, "num_channels", None) or getattr(vision, "in_channels", None) or 3
    height, width = _image_size(vision)
    return torch.randn(batch, channels, height, width, generator=generator)


def audio_features(config, batch: int, generator):
    """Log-mel features: whisper's (batch, mels, frames) or speech-to-text's (batch, frames, features)."""
    import torch

    audio = getattr(config, "audio_config", None) or getattr(config, "encoder_config", None) or config
    if getattr(audio, "input_feat_per_channel", None):
        features = audio.input_feat_per_channel * getattr(audio, "input_channels", 1)
        return torch.randn(batch, 32, features, generator=generator)
    mels = getattr(audio, "num_mel_bins", None)
    if not mels:
        raise CannotFeed(f"{type(audio).__name__} says neither num_mel_bins nor input_feat_per_channel")
    positions = getattr(audio, "max_source_positions", None) or 32
    return torch.randn(batch, mels, 2 * positions, generator=generator)


def _encoder_side(model, main: str, params, generator) -> dict[str, Any]:
    """The fixed encoder input of an encoder-decoder model, by its main input."""
    import torch

    config = model.config
    if main == "input_ids" and "input_ids" in params:
        encoder = getattr(config, "encoder", None) or config
        return {"input_ids": token_ids(encoder, ENCODER_LENGTH, generator)}
    if main == "input_features":
        return {"input_features": audio_features(config, 1, generator)}
    if main == "pixel_values":
        encoder = getattr(config, "encoder", None) or config
        return {"pixel_values": pixel_values(encoder, 1, generator)}
    if main == "input_values":
        return {"input_values": torch.randn(1, 3200, generator=generator)}
    raise CannotFeed(f"no encoder input for an encoder-decoder whose main input is {main!r}")


def _patch_grid(config, images: int, generator) -> dict[str, Any]:
    """Flattened patches of `images` images of 4 x 4 merged patches each, and their grid."""
    import torch

    merge = getattr(config, "spatial_merge_size", 1) or 1
    side = 2 * merge
    channels = getattr(config, "in_channels", None) or getattr(config, "num_channels", None) or 3
    temporal = getattr(config, "temporal_patch_size", 1) or 1
    patch = getattr(config, "patch_size", 14) or 14
    grid = torch.tensor([[1, side, side]] * images)
    patches = torch.randn(images * side * side, channels * temporal * patch * patch, generator=generator)
    return {"hidden_states": patches, "grid_thw": grid}


def _image_size(config) -> tuple[int, int]:
    size = getattr(config, "image_size", None) or IMAGE_SIZE
    if isinstance(size, (list, tuple)):
        return int(size[0]), int(size[-1])
    if isinstance(size, dict):
        return int(size.get("height", IMAGE_SIZE)), int(size.get("width", IMAGE_SIZE))
    return int(size), int(size)


def _parameters(function) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return {}

