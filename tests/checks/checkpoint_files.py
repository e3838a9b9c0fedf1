"""Checkpoint folders for the weights check's tests: a config.json and safetensors files whose
headers are real and whose data is a hole (a sparse file: the size the header says, no blocks on
disk), so a 70B-class checkpoint costs a few kilobytes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

# safetensors' names of torch's dtypes, and their sizes.
_NAMES = {"bfloat16": ("BF16", 2), "float32": ("F32", 4), "float16": ("F16", 2)}


def write_sparse_safetensors(path: Path, tensors: dict[str, tuple[tuple[int, ...], str]]) -> None:
    """A safetensors file of `tensors` (name -> (shape, dtype)) with a real header and no data:
    the file is truncated up to its full size, so its data is a hole."""
    header, offset = {}, 0
    for name, (shape, dtype) in tensors.items():
        code, size = _NAMES[dtype]
        count = 1
        for n in shape:
            count *= n
        header[name] = {"dtype": code, "shape": list(shape), "data_offsets": [offset, offset + count * size]}
        offset += count * size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text)
        handle.truncate(8 + len(text) + offset)


def model_tensors(config) -> dict[str, tuple[tuple[int, ...], str]]:
    """The names, shapes and dtype of what `save_pretrained` of this config's model writes (tied
    weights once), from the model built on the meta device."""
    import transformers

    from auditor.models.meta import meta_device

    cls = getattr(transformers, config.architectures[0])
    with meta_device():
        model = cls(config)
    dtype = str(config.dtype or "bfloat16").removeprefix("torch.")
    tied = set(getattr(model, "_tied_weights_keys", None) or {}) if getattr(config, "tie_word_embeddings", False) else set()
    return {name: (tuple(t.shape), dtype) for name, t in model.state_dict().items() if name not in tied}


def write_checkpoint(folder: Path, config, tensors: dict, shards: int = 1) -> Path:
    """A checkpoint folder: `config` saved as config.json, `tensors` in `shards` sparse files with an index."""
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    names = list(tensors)
    if shards == 1:
        write_sparse_safetensors(folder / "model.safetensors", tensors)
        return folder
    per = -(-len(names) // shards)
    weight_map = {}
    for index in range(shards):
        part = names[index * per:(index + 1) * per]
        file = f"model-{index + 1:05d}-of-{shards:05d}.safetensors"
        write_sparse_safetensors(folder / file, {name: tensors[name] for name in part})
        weight_map.update(dict.fromkeys(part, file))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


def llama_70b():
    """The config of a 70B Llama (Llama 3's shapes)."""
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
                       num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192,
                       architectures=["LlamaForCausalLM"], dtype="bfloat16", tie_word_embeddings=False)


def changed_checkpoints(root: Path, config, extra: str, lacking: str, shards: int = 1) -> dict[str, Path]:
    """Sparse checkpoint folders of `config` under `root`: `whole` (every tensor, in `shards` files),
    `extra` (one more tensor, named `extra`, that the model does not have) and `lacking` (without
    the tensor `lacking`)."""
    tensors = model_tensors(config)
    more = dict(tensors)
    more[extra] = ((8, 8), str(config.dtype or "bfloat16").removeprefix("torch."))
    fewer = {name: value for name, value in tensors.items() if name != lacking}
    return {"whole": write_checkpoint(root / "whole", config, tensors, shards=shards),
            "extra": write_checkpoint(root / "extra", config, more),
            "lacking": write_checkpoint(root / "lacking", config, fewer)}


def sweep_weights(root: Path, types, folders: dict[str, Path], engine: str, jobs: int = 1, env=None):
    """One sweep of the weights check over model `types` and the checkpoint `folders` (by row
    name): ({row: the engine's weights row}, {row: transformers' weights row})."""
    from tests.conftest import read_rows, run_auditor

    out = root / "run"
    # --models names the checkpoints' rows too (with --models, only the rows it names are swept)
    proc = run_auditor("sweep", "--models", ",".join((*types, *folders)),
                       *(a for folder in folders.values() for a in ("--checkpoint", str(folder))),
                       "--checks", "weights", "-o", str(out), "-j", str(jobs), env=env or {})
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    rows = [r for r in read_rows(out)[1] if r["check"] == "weights"]
    return ({r["model_type"]: r for r in rows if r["component"] == engine},
            {r["model_type"]: r for r in rows if not r["component"]})
