"""The user's own checkpoints: where they are, what their safetensors headers say, and how
transformers maps those tensors onto the model built on the meta device.

Only headers are read (names, shapes, dtypes: the first 8 + N bytes of each file), never the
data: a 70B checkpoint is judged in a second and a few hundred MB. The mapping is transformers'
own loading pipeline (`from_pretrained`'s steps after the download, in its order: the model class
built, its dtype plan, its weight conversion mapping, `_load_pretrained_model`, then
`_finalize_model_loading` with its tied weights and ignore lists) fed meta tensors of the
header's shapes, so renames, fused experts and tied weights are transformers' rules, not ours.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
# A header longer than this is not a safetensors header (the format's own limit is 100 MB).
MAX_HEADER = 100_000_000
# safetensors' dtype names -> torch's.
DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64", "I32": "int32",
          "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "F8_E4M3": "float8_e4m3fn",
          "F8_E5M2": "float8_e5m2", "U16": "uint16", "U32": "uint32", "U64": "uint64"}


class CheckpointError(ValueError):
    """A checkpoint folder or file that cannot be read as one; the message says which and why."""


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint to audit: `name` is its row (a folder's name, or ORG/NAME@REVISION of a
    Hugging Face cache snapshot), `path` the folder that should hold config.json and safetensors."""

    name: str
    path: Path


@dataclass(frozen=True)
class Tensor:
    """One tensor of a safetensors header."""

    dtype: str  # torch's name of it
    shape: tuple[int, ...]
    file: str


def find_checkpoints(given: str | Path) -> list[Checkpoint]:
    """The checkpoints of a folder named with --checkpoint: itself when it is a model folder
    (config.json or safetensors in it), or every snapshot of a Hugging Face cache folder (a hub
    cache root, a `models--ORG--NAME` folder, or one of its snapshots). CheckpointError when it is
    none of these."""
    path = Path(given).expanduser()
    if not path.is_dir():
        raise CheckpointError(f"{given}: no such folder")
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
        return [Checkpoint(_cache_name(path.parent.parent, path), path)]
    if path.name.startswith("models--") or (path / "snapshots").is_dir():
        return _snapshots(path, given)
    repos = sorted(p for p in path.glob("models--*") if p.is_dir())
    if repos:
        return [case for repo in repos for case in _snapshots(repo, given)]
    if (path / CONFIG).is_file() or any(path.glob("*.safetensors")):
        return [Checkpoint(path.resolve().name, path)]
    raise CheckpointError(f"{given}: no {CONFIG} or safetensors in it, and not a Hugging Face cache "
                          "folder (models--ORG--NAME/snapshots/REVISION/)")


def _snapshots(repo: Path, given) -> list[Checkpoint]:
    snapshots = sorted(p for p in (repo / "snapshots").glob("*") if p.is_dir())
    if not snapshots:
        raise CheckpointError(f"{given}: {repo.name} has no snapshots/REVISION/ folder")
    return [Checkpoint(_cache_name(repo, snapshot), snapshot) for snapshot in snapshots]


def _cache_name(repo: Path, snapshot: Path) -> str:
    """`ORG/NAME@REVISION` (the revision cut to 12 characters) of a hub cache snapshot."""
    parts = repo.name.removeprefix("models--").split("--")
    return f"{'/'.join(parts)}@{snapshot.name[:12]}"


def read_header(path: Path) -> dict[str, Tensor]:
    """The tensors of one safetensors file, from its header only; CheckpointError for a file that
    is not safetensors or is cut short (the header's last tensor ends past the file's end)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                raise CheckpointError(f"{path}: {size} bytes, too short for a safetensors header")
            (length,) = struct.unpack("<Q", head)
            if length > MAX_HEADER:
                raise CheckpointError(f"{path}: not a safetensors file (its first 8 bytes give a header of "
                                      f"{length} bytes)")
            text = handle.read(length)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if len(text) < length:
        raise CheckpointError(f"{path}: truncated: the header is {length} bytes, the file ends after {len(text)}")
    try:
        header = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not a safetensors file (its header is not JSON: {exc})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a safetensors file (its header is not a JSON object)")
    tensors, end = {}, 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (_, stop) = entry["dtype"], tuple(int(n) for n in entry["shape"]), entry["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{path}: not a safetensors file (tensor {name!r} has no dtype, shape and "
                                  "data_offsets)") from None
        if dtype not in DTYPES:
            raise CheckpointError(f"{path}: tensor {name!r} has dtype {dtype!r}, which safetensors does not define")
        tensors[name] = Tensor(DTYPES[dtype], shape, path.name)
        end = max(end, int(stop))
    if 8 + length + end > size:
        raise CheckpointError(f"{path}: truncated: its header's tensors end at byte {8 + length + end}, the file has "
                              f"{size}")
    return tensors


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a checkpoint folder: its index's, or every *.safetensors in it."""
    index = folder / INDEX
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{index}: not a safetensors index ({type(exc).__name__}: {exc})") from None
        files = [folder / name for name in dict.fromkeys(weight_map.values())]
        missing = [path.name for path in files if not path.is_file()]
        if missing:
            raise CheckpointError(f"{index} names files that are not there: {', '.join(missing[:5])}")
        return files
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        bins = sorted(p.name for p in folder.glob("*.bin"))
        more = f" ({', '.join(bins[:3])} is pickled weights: only safetensors headers are read)" if bins else ""
        raise CheckpointError(f"{folder}: no safetensors files{more}")
    return files


def checkpoint_tensors(folder: Path) -> dict[str, Tensor]:
    """Every tensor of a checkpoint folder, from the headers of its safetensors files."""
    tensors: dict[str, Tensor] = {}
    for path in weight_files(folder):
        tensors.update(read_header(path))
    return tensors


@dataclass(frozen=True)
class HeaderMapping:
    """What transformers' loading did with a checkpoint's tensors: the class it loaded into and
    the keys it could not place, as `from_pretrained(output_loading_info=True)` names them."""

    model_class: str
    tensors: int
    missing: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    mismatched: tuple[tuple[str, tuple, tuple], ...] = ()  # (name, checkpoint's shape, model's shape)
    conversion_errors: Mapping[str, str] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return not (self.missing or self.unexpected or self.mismatched or self.conversion_errors)


def model_class(config):
    """The class `from_pretrained` of this checkpoint would build: its config's first architecture
    where transformers has it, else AutoModel's class for the config."""
    import transformers

    for name in getattr(config, "architectures", None) or ():
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls
    from transformers import AutoModel

    return AutoModel._model_mapping[type(config)]


def map_onto_meta(config, tensors: Mapping[str, Tensor]) -> HeaderMapping:
    """transformers' own loading of `tensors` (meta tensors of the header's shapes and dtypes)
    into the model `config` builds on the meta device. Needs transformers 5's loading pipeline."""
    import torch
    from transformers.modeling_utils import LoadStateDictConfig

    from auditor.models.meta import meta_device, no_init_weights

    try:
        from transformers.conversion_mapping import get_model_conversion_mapping
    except ImportError as exc:  # transformers 4.x: another loader, not this one
        raise NotImplementedError("mapping safetensors headers needs transformers 5's loading pipeline "
                                  "(transformers.conversion_mapping)") from exc
    cls = model_class(config)
    with meta_device(), no_init_weights():
        model = cls(config)
    dtype = getattr(torch, str(getattr(config, "dtype", None) or "float32").removeprefix("torch."), torch.float32)
    load_config = LoadStateDictConfig(
        pretrained_model_name_or_path=None, download_kwargs={}, dtype=dtype, dtype_plan=model._get_dtype_plan(dtype),
        device_map={"": "meta"}, weight_mapping=get_model_conversion_mapping(model, None, None))
    state = {name: torch.empty(t.shape, dtype=getattr(torch, t.dtype), device="meta") for name, t in tensors.items()}
    info, _ = cls._load_pretrained_model(model, state, None, load_config)
    try:
        info = cls._finalize_model_loading(model, load_config, info)
    except RuntimeError:
        # Its loading report refuses shapes that differ (ignore_mismatched_sizes=False), after
        # naming them in `info`: the keys are the verdict, as from_pretrained's message says.
        if not info.mismatched_keys:
            raise
    return HeaderMapping(cls.__name__, len(tensors), tuple(sorted(info.missing_keys)), tuple(sorted(info.unexpected_keys)),
                    tuple(sorted((name, tuple(a), tuple(b)) for name, a, b in info.mismatched_keys)),
                    dict(info.conversion_errors))


def describe_keys(names: Iterable[str], limit: int = 5) -> str:
    names = list(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more
