"""What a type's processor (image processor, feature extractor) makes of one seeded input, written
down so that another release can compare: the tokenizer check's processor rows.

The class is the one the type's auto class picks by default in this release (under 4.x the slow
image processor; under 5.x the torchvision one where torchvision imports, else the PIL one), made
with its own defaults and saved with `save_pretrained`. The input is seeded: a 48x64 RGB image
(uint8), or a 4000-sample waveform at the extractor's sampling rate. The outputs (`return_tensors
="np"`) are saved beside the save (safetensors) with their keys and shapes; another release loads
the folder with the auto class and compares keys, shapes and values (max abs diff).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path

SEED = 0
KINDS = {"image-processor": ("image_processing_auto", "IMAGE_PROCESSOR_MAPPING_NAMES", "AutoImageProcessor"),
         "feature-extractor": ("feature_extraction_auto", "FEATURE_EXTRACTOR_MAPPING_NAMES", "AutoFeatureExtractor")}
OUTPUTS = "auditor-processor.safetensors"
INFO = "auditor-processor.json"
TOLERANCE = 1e-4  # float32 on the CPU: a reordered sum, never an interpolation


def processor_classes(model_type: str) -> dict[str, str]:
    """{row component: class name} of the processors this release's auto classes map the type to."""
    found = {}
    for kind, (module, mapping, _) in KINDS.items():
        names = getattr(importlib.import_module(f"transformers.models.auto.{module}"), mapping)
        entry = names.get(model_type)
        if isinstance(entry, dict):  # v5: {"pil": ..., "torchvision": ...}
            torchvision = importlib.util.find_spec("torchvision") is not None
            entry = (entry.get("torchvision") if torchvision else None) or entry.get("pil")
        elif isinstance(entry, (tuple, list)):  # v4: (slow, fast); the slow one is the default
            entry = next((name for name in entry if name), None)
        if entry:
            found[kind] = entry
    return found


def processor_class(kind: str, name: str):
    module, _, _ = KINDS[kind]
    auto = importlib.import_module(f"transformers.models.auto.{module}")
    lookup = getattr(auto, "get_image_processor_class_from_name", None) if kind == "image-processor" else \
        getattr(auto, "feature_extractor_class_from_name", None)
    found = lookup(name) if lookup else None
    if found is None:
        raise ImportError(f"{name} cannot be imported here (its backend, e.g. Pillow or torchvision, is missing)")
    return found


def seeded_input(kind: str, processor) -> dict:
    import numpy as np

    rng = np.random.default_rng(SEED)
    if kind == "image-processor":
        return {"images": [rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)]}
    rate = getattr(processor, "sampling_rate", 16000) or 16000
    return {"raw_speech" if _takes_raw_speech(processor) else "audio": (rng.standard_normal(4000) * 0.1).astype("float32"),
            "sampling_rate": rate}


def _parameters(processor) -> tuple[str, ...]:
    import inspect

    try:
        return tuple(inspect.signature(processor.__call__).parameters)
    except (TypeError, ValueError):
        return ()


def _takes_raw_speech(processor) -> bool:
    parameters = _parameters(processor)
    return not parameters or "raw_speech" in parameters or "audio" not in parameters


def run(kind: str, processor) -> dict:
    """{output name: float32 array} of the processor on the seeded input."""
    import numpy as np
    import torch

    np.random.seed(SEED)  # an extractor that draws noise (univnet's noise_sequence) draws the same
    torch.manual_seed(SEED)
    inputs = seeded_input(kind, processor)
    if "generator" in _parameters(processor):  # univnet draws its noise from a fresh generator unless given one
        inputs["generator"] = np.random.default_rng(SEED)
    if kind == "feature-extractor" and not _takes_raw_speech(processor):
        out = processor(**inputs, return_tensors="np")
    elif kind == "feature-extractor":
        speech = inputs.pop("raw_speech")
        out = processor(speech, **inputs, return_tensors="np")
    else:
        out = processor(**inputs, return_tensors="np")
    arrays = {}
    for key, value in dict(out).items():
        try:
            array = np.asarray(value)
        except Exception:
            continue
        if array.dtype.kind in "fiub":
            arrays[key] = np.ascontiguousarray(array.astype("float32"))
    return arrays


def save(kind: str, processor, folder: Path, info: dict) -> None:
    from safetensors.numpy import save_file

    outputs = run(kind, processor)
    processor.save_pretrained(str(folder))
    save_file(outputs, str(folder / OUTPUTS))
    shapes = {key: list(value.shape) for key, value in outputs.items()}
    (folder / INFO).write_text(json.dumps({**info, "shapes": shapes}, indent=1), encoding="utf-8")


def load_and_compare(kind: str, folder: Path) -> tuple[bool, str, dict]:
    """(same, message, extras) of the processor saved in `folder` loaded here with the auto class
    and run on the same seeded input; raises what loading or running raises."""
    import numpy as np
    import transformers
    from safetensors.numpy import load_file

    info = json.loads((folder / INFO).read_text(encoding="utf-8"))
    auto = getattr(transformers, KINDS[kind][2])
    processor = auto.from_pretrained(str(folder), local_files_only=True)
    outputs, saved = run(kind, processor), load_file(str(folder / OUTPUTS))
    extras = {"class": info["class"], "saved_by": info["transformers"], "loaded_as": type(processor).__name__}
    said = f"{KINDS[kind][2]} on {info['class']} saved by transformers {info['transformers']} (as {type(processor).__name__})"
    if set(outputs) != set(saved):
        return False, f"{said}: output keys {sorted(saved)} -> {sorted(outputs)}", extras
    for key in sorted(saved):
        if outputs[key].shape != saved[key].shape:
            return False, f"{said}: {key} of shape {list(saved[key].shape)} -> {list(outputs[key].shape)}", extras
    largest = max((float(np.abs(outputs[k] - saved[k]).max()) for k in saved if saved[k].size), default=0.0)
    extras.update(max_abs_diff=largest, tolerance=f"atol {TOLERANCE:g} (float32)")
    if largest > TOLERANCE:
        key = max((k for k in saved if saved[k].size), key=lambda k: float(np.abs(outputs[k] - saved[k]).max()))
        return False, f"{said}: {key} differs, max abs diff {largest:.3g} (atol {TOLERANCE:g})", extras
    return True, f"{said}: the same keys, shapes and values (max abs diff {largest:.2g})", extras
