"""The processor files a checkpoint of a multimodal type ships beside its config.json, written
offline: its processor class (transformers' PROCESSOR_MAPPING_NAMES) with each sub-processor at
its class's defaults (the image, video or audio processor transformers maps the type to) and a
tiny word-level tokenizer that knows the special tokens the processor asks for (`<image>`,
`<|image_pad|>`, ...). An engine's own code reads these before it builds anything (vLLM's
ModelConfig loads the processor of a Transformers-backend multimodal model to learn its
modalities); a config.json alone has none, which is this machine's input, not the model's.

The files say nothing of a real checkpoint's vocabulary or image sizes: they are the class's
defaults, enough to be loaded, never a claim about the model's weights.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from dataclasses import dataclass

# sub-processor attribute -> (transformers' auto module, its mapping of model type -> class name(s))
_SUB_PROCESSORS = {
    "image_processor": ("image_processing_auto", "IMAGE_PROCESSOR_MAPPING_NAMES"),
    "video_processor": ("video_processing_auto", "VIDEO_PROCESSOR_MAPPING_NAMES"),
    "feature_extractor": ("feature_extraction_auto", "FEATURE_EXTRACTOR_MAPPING_NAMES"),
}
_BASE_TOKENS = ("<unk>", "<s>", "</s>", "<pad>")
# A tokenizer's AttributeError naming a token the processor reads off it ("... has no attribute boi_token_id"),
# or the processor's own check (HunYuanVLProcessor: "Tokenizer is missing required attribute 'image_token'")
_ASKED = re.compile(r"(?:has no attribute|missing required attribute) '?([a-z_]+_token)(?:_id)?'?")
_ASKS = 8


@dataclass(frozen=True)
class ProcessorFiles:
    """What `write` did: `processor` the class written ("" where the type has none), `files`
    the names written, `reason` why none were where the type has a processor."""

    processor: str = ""
    files: tuple[str, ...] = ()
    reason: str = ""

    @property
    def tokenizer(self) -> bool:
        """Whether a tokenizer was written (an engine may then load it, as from a checkpoint)."""
        return "tokenizer_config.json" in self.files

    def extras(self) -> dict:
        if self.files:
            return {"processor_files": f"{self.processor} defaults, tiny tokenizer (written offline)"}
        return {"processor_files": f"not written: {self.reason}"} if self.reason else {}


def write(model_type: str, directory: str) -> ProcessorFiles:
    """The processor files of `model_type` written into `directory` (beside its config.json).
    Best effort: a processor this cannot make is left out, with the reason (the engine then
    meets the directory as it would have without)."""
    import transformers
    from transformers.models.auto import processing_auto

    name = processing_auto.PROCESSOR_MAPPING_NAMES.get(model_type)
    cls = getattr(transformers, name, None) if name else _module_processor(model_type)
    if cls is None:
        return ProcessorFiles()
    before = set(os.listdir(directory))
    try:
        parts = {attr: _sub_processor(model_type, attr) for attr in cls.get_attributes() if "tokenizer" not in attr}
        processor = _with_tokenizer(cls, parts)
        processor.save_pretrained(directory)
    except Exception as exc:
        return ProcessorFiles(cls.__name__, reason=f"{type(exc).__name__}: {exc}"[:300])
    return ProcessorFiles(cls.__name__, tuple(sorted(set(os.listdir(directory)) - before)))


def _with_tokenizer(cls, parts: dict):
    """`cls` made of `parts` and a tiny tokenizer that has what the processor asks of it: the
    special tokens it reads or falls back on (`image_token`, ...), and the named ones it reads
    as the tokenizer's attributes (Gemma3Processor's `tokenizer.boi_token_id`), learnt by
    making it until it asks for nothing more."""
    tokenizers = [attr for attr in cls.get_attributes() if "tokenizer" in attr]
    named: dict[str, str] = {}
    looked_up: set[str] = set()  # tokens the processor looks up in the vocabulary (FuyuProcessor's "|SPEAKER|")
    for _ in range(_ASKS):
        try:
            processor = cls(**parts, **dict.fromkeys(tokenizers, _tiny_tokenizer(looked_up, named)))
            break
        except (AttributeError, ValueError) as exc:
            asked = _ASKED.search(str(exc))
            if asked is None or asked.group(1) in named:
                raise
            named[asked.group(1)] = f"<{asked.group(1)}>"
        except KeyError as exc:
            token = exc.args[0] if exc.args else None
            if not isinstance(token, str) or token in looked_up:
                raise
            looked_up.add(token)
    else:
        raise ValueError(f"{cls.__name__} asks its tokenizer for more than {_ASKS} tokens")
    read = {v for k, v in vars(processor).items() if k.endswith("_token") and isinstance(v, str)}
    return cls(**parts, **dict.fromkeys(tokenizers, _tiny_tokenizer(read | looked_up, named)))


def _module_processor(model_type: str):
    """The processor class transformers defines in `model_type`'s own module where its auto
    mapping has none (Kosmos2Processor, XCLIPProcessor in 5.18.0): the one ProcessorMixin of the
    module's processing file, or None (no processor, or more than one)."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name
    from transformers.processing_utils import ProcessorMixin

    module_name = model_type_to_module_name(model_type)
    try:
        module = importlib.import_module(f"transformers.models.{module_name}.processing_{module_name}")
    except ImportError:
        return None
    found = [value for value in vars(module).values() if isinstance(value, type) and issubclass(value, ProcessorMixin)
             and value is not ProcessorMixin and value.__module__ == module.__name__]
    return found[0] if len(found) == 1 else None


def _sub_processor(model_type: str, attr: str):
    """`attr` (an image/video processor, a feature extractor) of `model_type` at its class's defaults."""
    import transformers

    if attr not in _SUB_PROCESSORS:
        raise ValueError(f"no default for the processor's {attr}")
    module, mapping = _SUB_PROCESSORS[attr]
    names = getattr(importlib.import_module(f"transformers.models.auto.{module}"), mapping).get(model_type)
    if isinstance(names, dict):  # image processors by backend: transformers' fast one where torchvision is here
        names = (names.get("torchvision") if importlib.util.find_spec("torchvision") else None) or names.get("pil")
    if isinstance(names, (tuple, list)):
        names = next((n for n in names if n), None)
    if not names:
        raise ValueError(f"transformers maps {model_type} to no {attr} class")
    return getattr(transformers, names)()


def _tiny_tokenizer(special: set[str] = frozenset(), named: dict[str, str] | None = None):
    """A word-level tokenizer of a few words, `special` as special tokens and `named` as named
    ones (attribute -> token)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = [*_BASE_TOKENS, *"abcdefghijklmnopqrstuvwxyz"]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", bos_token="<s>",
                                        eos_token="</s>", pad_token="<pad>", extra_special_tokens=dict(named or {}))
    extra = sorted(set(special) - set(_BASE_TOKENS) - set((named or {}).values()))
    if extra:
        tokenizer.add_special_tokens({"additional_special_tokens": extra})
    return tokenizer

