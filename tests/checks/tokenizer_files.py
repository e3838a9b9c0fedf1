"""Two model folders with real-format tokenizers, as the hub holds them, made offline in seconds.

- `llama_folder`: Llama's shape as transformers 4.x saved it: `tokenizer.model` (a sentencepiece
  BPE with byte fallback), a `tokenizer.json` whose pre-tokenizer is v4's Metaspace
  (prepend_scheme "first", split off) over the same vocabulary and merges, `tokenizer_config.json`
  naming LlamaTokenizerFast with `legacy: false` and a chat template, and a llama config.json.
- `byte_level_folder`: GPT-2's shape: `vocab.json`, `merges.txt` and a byte-level `tokenizer.json`,
  a chat template, and a gpt2 config.json.
The vocabularies are the auditor's own tiny ones (auditor.models.vocabularies), so both sides of
a comparison see the same files.
"""

from __future__ import annotations

import json
from pathlib import Path

TEMPLATE = ("{{ bos_token }}{% for message in messages %}{{ '[' + message['role'] + '] ' + message['content'] "
            "+ eos_token }}{% endfor %}{% if add_generation_prompt %}{{ '[assistant] ' }}{% endif %}")


def llama_folder(folder: Path) -> Path:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    from auditor.models.vocabularies import sentencepiece_model

    folder.mkdir(parents=True, exist_ok=True)
    model = folder / "tokenizer.model"
    model.write_bytes(sentencepiece_model(("<unk>", "<s>", "</s>"), bpe=True))
    vocab, merges = _bpe_of(model)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tokenizer.normalizer = normalizers.Sequence([])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                             special_tokens=[("<s>", vocab["<s>"])])
    tokenizer.add_special_tokens(["<unk>", "<s>", "</s>"])
    tokenizer.save(str(folder / "tokenizer.json"))
    _config(folder, {"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
                     "unk_token": "<unk>", "add_bos_token": True, "add_eos_token": False, "legacy": False,
                     "model_max_length": 4096, "padding_side": "left", "chat_template": TEMPLATE},
            {"model_type": "llama", "architectures": ["LlamaForCausalLM"]})
    return folder


def _bpe_of(model: Path) -> tuple[dict, list]:
    """The vocabulary and merges of a sentencepiece BPE model, as transformers' converter derives
    them (each piece's splits into two pieces of the vocabulary, in the order of the merged
    piece's id), here without its API, which changed between v4 and v5."""
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=str(model))
    vocab = {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    found = sorted((merged, vocab[piece[:i]], vocab[piece[i:]], piece[:i], piece[i:])
                   for piece, merged in vocab.items() for i in range(1, len(piece))
                   if piece[:i] in vocab and piece[i:] in vocab)
    return vocab, [(left, right) for *_, left, right in found]


def byte_level_folder(folder: Path) -> Path:
    from auditor.models.vocabularies import byte_level_bpe, byte_level_tokenizer_json

    folder.mkdir(parents=True, exist_ok=True)
    specials = ("<|endoftext|>",)
    vocab, merges = byte_level_bpe(specials)
    (folder / "vocab.json").write_text(vocab, encoding="utf-8")
    (folder / "merges.txt").write_text(merges, encoding="utf-8")
    (folder / "tokenizer.json").write_text(byte_level_tokenizer_json(specials), encoding="utf-8")
    _config(folder, {"tokenizer_class": "GPT2TokenizerFast", "bos_token": "<|endoftext|>",
                     "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>", "add_prefix_space": False,
                     "model_max_length": 1024, "chat_template": TEMPLATE},
            {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})
    return folder


def _config(folder: Path, tokenizer_config: dict, config: dict) -> None:
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=1), encoding="utf-8")
    (folder / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
