"""Tiny vocabularies made offline, in the files a tokenizer class reads.

A tokenizer class names its files in `vocab_files_names` (`tokenizer.model`, `vocab.json` and
`merges.txt`, `vocab.txt`, `tokenizer.json`, ...). For each file kind a tiny vocabulary is trained
here, in well under a second, on one fixed text (English, digits, Cyrillic, CJK and emoji, so that
byte fallback and multi-byte pieces are reached), holding the class's own special tokens:
- a `.model`/`.spm` file: sentencepiece (BPE with byte fallback for `tokenizer.model`, Llama's and
  Gemma's convention; unigram for the others, T5's and XLNet's);
- `vocab.json` with `merges.txt`: byte-level BPE (`tokenizers`); `vocab.json` alone: a character
  vocabulary (the CTC tokenizers');
- `vocab.txt`: WordPiece; `tokenizer.json` alone: a byte-level BPE `tokenizer.json`.
Optional files (a `tokenizer.json` beside slow files, a `tokenizer_config.json`, Whisper's
`normalizer.json`) are left out: the class makes them, as it does from a slow vocabulary. A class
that needs any other file (fairseq's `dict.txt`, `bpe.codes`, an entity vocabulary) cannot be made
here: `VocabularyError` says which file.

The vocabularies depend only on the text and the special tokens, so every release makes the same
one: that is what lets an older release's save be compared with a newer release's load.
"""

from __future__ import annotations

import functools
import inspect
import io
import json
from pathlib import Path

# Optional: a class makes them itself from the others (a fast class converts its slow files).
OPTIONAL = frozenset({"tokenizer_file", "tokenizer_config_file", "normalizer_file"})
SENTENCEPIECE_SUFFIXES = (".model", ".spm")
VOCAB_SIZE = 320
BYTE_FALLBACK_SIZE = 640  # 256 byte pieces, the text's characters, then merges
SPECIAL_ARGUMENTS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
# The text the vocabularies are trained on: each line a few times, so that merges form.
TRAINING_TEXT = (
    "Hello world, hello there. The quick brown fox jumps over the lazy dog.",
    "Hello  world\n\nbye\tnow; numbers 0 1 2 3 4 5 6 7 8 9 12345 3.14 2026",
    "def main():\n    return print('hello')  # code with    spaces",
    "Привет мир, как дела? こんにちは世界 你好世界 مرحبا",
    "emoji 🤗 🚀 ok, café naïve über",
    "see <url> and <url>here",
)
# A sentencepiece user-defined symbol (a piece the model emits whole, as XLM-R's and T5's vocabularies
# hold a few): converters have treated them as added tokens or not, release by release.
USER_SYMBOLS = ("<url>",)


class VocabularyError(Exception):
    """No tiny vocabulary can be made in the files this class reads."""


def class_specials(cls) -> dict[str, str]:
    """The special tokens a tokenizer class defaults to ({"bos_token": "<s>", ...}), from its
    `__init__`'s defaults."""
    try:
        parameters = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return {}
    found = {}
    for name in SPECIAL_ARGUMENTS:
        parameter = parameters.get(name)
        default = None if parameter is None else parameter.default
        text = getattr(default, "content", default)  # an AddedToken's text
        if isinstance(text, str) and text:
            found[name] = text
    return found


def needed_files(cls) -> dict[str, str]:
    """The files the class cannot do without: {argument: file name}."""
    names = getattr(cls, "vocab_files_names", None) or {}
    return {argument: name for argument, name in names.items() if argument not in OPTIONAL}


def make_files(cls, folder: Path) -> dict[str, str]:
    """Write the class's files into `folder`: {argument: path}. Raises VocabularyError for a
    file this module does not make."""
    names = getattr(cls, "vocab_files_names", None)
    if names is None:
        raise VocabularyError(f"{cls.__name__} reads no vocabulary files of its own (a composite tokenizer)")
    needed = needed_files(cls)
    # A class that reads tokenizer.json alone, or a fast class with no slow one to convert from
    # (GPT-NeoX's, Bloom's, PreTrainedTokenizerFast itself): its tokenizer.json.
    alone = not needed or (_fast(cls) and getattr(cls, "slow_tokenizer_class", "") is None)
    if alone and "tokenizer_file" in names:
        needed = {"tokenizer_file": names["tokenizer_file"]}
    specials = tuple(dict.fromkeys(class_specials(cls).values()))
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    files = set(needed.values())
    for argument, name in needed.items():
        path = folder / name
        if name.endswith(SENTENCEPIECE_SUFFIXES):
            path.write_bytes(sentencepiece_model(specials, bpe=name == "tokenizer.model"))
        elif name == "vocab.json" and "merges.txt" in files:
            vocab, _ = byte_level_bpe(specials)
            path.write_text(vocab, encoding="utf-8")
        elif name == "merges.txt" and "vocab.json" in files:
            _, merges = byte_level_bpe(specials)
            path.write_text(merges, encoding="utf-8")
        elif name == "vocab.json":
            path.write_text(character_vocab(specials), encoding="utf-8")
        elif name == "vocab.txt" or name.endswith(".tokenizer"):  # ProphetNet's is a WordPiece vocab.txt
            path.write_text(wordpiece_vocab(specials), encoding="utf-8")
        elif name == "tokenizer.json":
            path.write_text(byte_level_tokenizer_json(specials), encoding="utf-8")
        else:
            raise VocabularyError(f"{cls.__name__} reads {name} ({argument}), a file no tiny vocabulary is made in")
        written[argument] = str(path)
    return written


def _fast(cls) -> bool:
    """A v4 fast class (PreTrainedTokenizerFast's): under v5 every class is its own backend."""
    return any(base.__name__ == "PreTrainedTokenizerFast" for base in cls.__mro__)


def _lines() -> list[str]:
    return [line for line in TRAINING_TEXT for _ in range(20)]


@functools.lru_cache(maxsize=16)
def sentencepiece_model(specials: tuple[str, ...], bpe: bool) -> bytes:
    """A sentencepiece model (its serialized proto): `<unk>`, `<s>`, `</s>` at 0, 1, 2 and the
    other specials as control symbols; BPE with byte fallback, or unigram."""
    import sentencepiece

    control = [token for token in specials if token not in ("<unk>", "<s>", "</s>")]
    out = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(_lines()), model_writer=out, vocab_size=BYTE_FALLBACK_SIZE if bpe else VOCAB_SIZE,
        model_type="bpe" if bpe else "unigram", byte_fallback=bpe, character_coverage=1.0,
        control_symbols=control, user_defined_symbols=list(USER_SYMBOLS), hard_vocab_limit=False, minloglevel=2, num_threads=1,
        split_digits=bpe, allow_whitespace_only_pieces=True)
    return out.getvalue()


@functools.lru_cache(maxsize=16)
def byte_level_bpe(specials: tuple[str, ...]) -> tuple[str, str]:
    """(vocab.json, merges.txt) of a byte-level BPE trained on the text."""
    tokenizer = _trained_byte_level(specials)
    model = json.loads(tokenizer.to_str())["model"]
    merges = ["#version: 0.2"] + [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return json.dumps(model["vocab"], ensure_ascii=False), "\n".join(merges) + "\n"


@functools.lru_cache(maxsize=16)
def byte_level_tokenizer_json(specials: tuple[str, ...]) -> str:
    return _trained_byte_level(specials).to_str()


def _trained_byte_level(specials: tuple[str, ...]):
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(_lines(), vocab_size=VOCAB_SIZE, min_frequency=2, show_progress=False,
                                  special_tokens=list(specials))
    return tokenizer._tokenizer


@functools.lru_cache(maxsize=16)
def wordpiece_vocab(specials: tuple[str, ...]) -> str:
    """vocab.txt of a WordPiece trained on the text, the BERT specials first."""
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(lowercase=False)
    tokens = list(dict.fromkeys(("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *specials)))
    tokenizer.train_from_iterator(_lines(), vocab_size=VOCAB_SIZE, min_frequency=2, show_progress=False,
                                  special_tokens=tokens)
    vocab = tokenizer.get_vocab()
    return "\n".join(sorted(vocab, key=vocab.__getitem__)) + "\n"


@functools.lru_cache(maxsize=16)
def character_vocab(specials: tuple[str, ...]) -> str:
    """vocab.json of single characters (a CTC tokenizer's), "|" the word delimiter."""
    characters = sorted({c for line in TRAINING_TEXT for c in line if not c.isspace()} | {"|"})
    tokens = list(dict.fromkeys((*specials, *characters)))
    return json.dumps({token: index for index, token in enumerate(tokens)}, ensure_ascii=False)
