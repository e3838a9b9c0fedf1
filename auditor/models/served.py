"""A type's tiny checkpoint in a shape an engine's kernels take (the `outputs` check's).

The type's default config shrunk (auditor.models.tiny) to four heads of the head size the engine's
attention backend takes on this device (`head_size`, asked of the engine: vLLM's CPU attention
takes 32, 64, 80, ..., not the tiny configs' 16), so the width is four head sizes; every window
shorter than the prompt (auditor.models.tiny.exercise); the output head untied from the input
embeddings wherever the config has the switch, so that a tying bug shows. Built with the class
the engine is given as the architecture (the type's causal-LM class, else its image-text-to-text
or vision-to-sequence class: the serves check's order), and every floating parameter drawn
again with seeded noise of std NOISE added, so that the logits are not flat and a norm's or a
bias's mishandling shows. Saved with `save_pretrained` in float32, `architectures` naming that class.
A type with no such class is given its AutoModel class, which an engine serves as a pooling model:
its hidden states are compared, pooled as the engine pools them (auditor.engines.outputs).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from auditor.models import processor_files

NOISE = 0.2
SEED = 0
GENERATE, EMBED = "generate", "embed"  # the task a checkpoint is run for
# The mappings whose classes give logits over the vocabulary, in the order a type's architecture is
# taken from them; then the AutoModel class, which has none (an engine serves it as a pooling model).
GENERATIVE = ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
              "MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES")
ARCHITECTURE_MAPPINGS = (*GENERATIVE, "MODEL_MAPPING_NAMES")


class CannotServe(ValueError):
    """No tiny checkpoint of this type an engine could be held to (no class with logits, a config
    that will not shrink to the engine's shape): the row is skipped, saying why."""


@dataclass(frozen=True)
class ServedCheckpoint:
    folder: Path
    architecture: str
    model: object  # the transformers model saved, in eval mode: the reference side
    prompt: tuple[int, ...]
    vocab: int
    changed: dict  # config fields changed beyond the shrink (windows, layers, ties), {field: (before, after)}
    task: str = GENERATE  # GENERATE (logits) or EMBED (hidden states, pooled as the engine pools them)
    tokenizer: bool = False  # a tokenizer is in the folder (the engine then loads it, as from a checkpoint)
    files: str = ""  # what was written beside the weights for the engine: a processor's files, a tokenizer


def architecture_for(model_type: str) -> tuple[str, str]:
    """(architecture, the mapping it came from) for `model_type`: the first of ARCHITECTURE_MAPPINGS
    that maps it; ("", "") where transformers maps it to no model class. What an engine is given
    (the serves check's and the outputs check's one rule)."""
    from transformers.models.auto import modeling_auto

    for name in ARCHITECTURE_MAPPINGS:
        found = getattr(modeling_auto, name, {}).get(model_type)
        if isinstance(found, (tuple, list)):
            found = found[0] if found else None
        if found:
            return found, name
    return "", ""


def architecture(model_type: str) -> tuple[str, str]:
    """(the transformers class an engine is given for `model_type`, the task it is run for):
    GENERATE (logits over the vocabulary) from a class of GENERATIVE, else EMBED (its AutoModel
    class: an engine serves a base model as a pooling model, its hidden states pooled)."""
    found, mapping = architecture_for(model_type)
    return (found, GENERATE if mapping in GENERATIVE else EMBED) if found else ("", "")


def write(config, model_type: str, folder: Path, head_size: int, length: int) -> ServedCheckpoint:
    """The tiny checkpoint of `config` in `folder` (see the module's docstring), with a seeded
    prompt of `length` ids from its vocabulary (no special token). Raises CannotServe."""
    import torch
    import transformers

    from auditor.models.inputs import CannotFeed, token_ids
    from auditor.models.tiny import ShrinkError, shrink
    from auditor.models.tiny.exercise import as_saved, exercised
    from auditor.models.tiny.shrinker import SIZES

    arch, task = architecture(model_type)
    if not arch:
        raise CannotServe("no architecture: transformers maps this type to no model class")
    cls = getattr(transformers, arch, None)
    if cls is None:
        raise CannotServe(f"transformers has no class {arch}")
    sizes = dataclasses.replace(SIZES, hidden=4 * head_size, heads=4, intermediate=8 * head_size)
    try:
        tiny = shrink(config, sizes)
    except ShrinkError as exc:
        raise CannotServe(f"cannot shrink to head size {head_size}: {exc}") from exc
    tiny, changed = as_saved(*exercised(tiny, length))
    changed.update(_untied(tiny) if task == GENERATE else {})
    tiny.architectures = [arch]
    torch.manual_seed(SEED)
    model = cls._from_config(tiny, dtype=torch.float32).eval()
    _drawn(model)
    model.save_pretrained(folder, safe_serialization=True)
    generator = torch.Generator().manual_seed(SEED)
    try:
        prompt = tuple(int(i) for i in token_ids(model.config, length, generator)[0])
    except CannotFeed as exc:
        raise CannotServe(str(exc)) from exc
    text = model.config.get_text_config(decoder=True)
    vocab = int(getattr(text, "vocab_size", 0) or 0)
    files = processor_files.write(model_type, str(folder))  # a multimodal type's processor, as a checkpoint has
    tokenizer, written = files.tokenizer, files.extras().get("processor_files", "")
    if not tokenizer and task == EMBED and vocab:
        _word_tokenizer(folder, vocab)  # an engine's pooling path reads a tokenizer even for ids
        tokenizer, written = True, f"a word-level tokenizer of the {vocab} ids (written offline)"
    return ServedCheckpoint(folder, arch, model, prompt, vocab, changed, task, tokenizer, written)


def _word_tokenizer(folder: Path, vocab: int) -> None:
    """A tokenizer whose every id is a token of its own ("t0" ... ), so that any prompt of ids is in
    its vocabulary and decodes: what an engine that needs a tokenizer is given for a made checkpoint."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0").save_pretrained(folder)


def _untied(config) -> dict:
    """The output head untied wherever the config (or its text config) has the switch on."""
    changed = {}
    text = config.get_text_config(decoder=True)
    for prefix, part in (("", config), ("text_config.", text)):
        if getattr(part, "tie_word_embeddings", None) is True:
            part.tie_word_embeddings = False
            changed[f"{prefix}tie_word_embeddings"] = (True, False)
        if part is text:
            break
    return changed


def _drawn(model) -> None:
    import torch

    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.is_floating_point():
                parameter.add_(torch.randn(parameter.shape, generator=generator) * NOISE)
