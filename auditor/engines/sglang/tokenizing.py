"""SGLang's own tokenizer loading (needs SGLang): the tokenizer check's row `tokenizer/sglang`.

SGLang's `get_tokenizer` (sglang/srt/utils/hf_transformers/tokenizer.py in 0.5.23) as its server
calls it for a local folder: tokenizer_mode "auto" (use_fast), the huggingface backend,
trust_remote_code off. It passes `clean_up_tokenization_spaces=False` to AutoTokenizer, takes
mistral_common for a bare tekken.json, re-resolves a TokenizersBackend by its declared class, and
applies its post-load fixes (added tokens re-registered, extra stop tokens): each may make it
tokenize or decode otherwise than transformers' AutoTokenizer on the same files.
"""

from __future__ import annotations

from pathlib import Path


def load(folder: Path):
    """(the tokenizer the engine serves with, the engine's own function that loaded it)."""
    from sglang.srt.utils.hf_transformers.tokenizer import get_tokenizer

    return get_tokenizer(str(folder), tokenizer_mode="auto", trust_remote_code=False), get_tokenizer
