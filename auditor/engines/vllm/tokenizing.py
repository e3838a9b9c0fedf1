"""vLLM's own tokenizer loading (needs vLLM): the tokenizer check's row `tokenizer/vllm`.

vLLM's `get_tokenizer` (vllm/tokenizers/registry.py in 0.34.0) as the engine calls it for a model
served from a local folder: tokenizer_mode "auto" (mistral_common where the folder is in Mistral's
format, a `tekken.json` or `tokenizer.model.v*`; else transformers' AutoTokenizer, or
TokenizersBackend for the model types vLLM overrides, behind vLLM's cached wrapper),
trust_remote_code off. The folder holds the type's config.json too (the check stages it), so that
vLLM's choices by model type are made as for a served model.
"""

from __future__ import annotations

from pathlib import Path


def load(folder: Path):
    """(the tokenizer the engine serves with, the engine's own function that loaded it)."""
    from vllm.tokenizers import get_tokenizer

    return get_tokenizer(str(folder), tokenizer_mode="auto", trust_remote_code=False), get_tokenizer
