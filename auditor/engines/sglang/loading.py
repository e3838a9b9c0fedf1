"""SGLang's own weight loader, on the meta device, fed a checkpoint's safetensors headers (needs SGLang).

The `weights` check's SGLang row (`weights/sglang`): SGLang's model loader as the serves row runs
it (serving.py: its parallel state, ServerArgs with `--model-impl transformers`, ModelConfig,
get_model_loader, load_model on the meta device), but with `load_format="safetensors"` on a
folder of the checkpoint's own config.json and weight files, so that SGLang's DefaultModelLoader
runs: its choice of files (`_prepare_weights`), the model's own `load_weights` (the Transformers
backend's AutoWeightsLoader with its weight mapper; its MoE expert mapping), then
`postprocess_weights`. One stand-in: SGLang's reader of safetensors data
(`safetensors_weights_iterator`, srt/model_loader/weight_utils.py, as loader.py calls it) yields
meta tensors of the headers' names, shapes and dtypes. What the model's load_weights returns is
kept (`load_weights_only` wrapped), so a parameter it did not report loaded is named: SGLang's
loader itself checks nothing of the kind. Verdicts: auditor/engines/weights.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from auditor.engines import weights

TITLE = "SGLang"
_LOADER = "sglang.srt.model_loader.loader"


def outcome(case, context, folder: Path):
    """The engine's `loads_weights` (auditor.engines.interface.Engine): SGLang's loader on the
    checkpoint in `folder`, as a row's outcome."""
    return load(folder, data=not case.checkpoint)


def load(folder: Path, data: bool = False):
    """SGLang's loader with load_format="safetensors" on the checkpoint in `folder`, headers only
    (`data`: on the CPU with the data where the meta device stops it): a row's outcome."""
    import json

    from auditor.engines.sglang import serving

    def attempt(checkpoint: Path, files, on_meta: bool):
        architectures = json.loads((checkpoint / "config.json").read_text(encoding="utf-8")).get("architectures")
        with weights.staged(checkpoint, files) as directory, headers_only(replace=on_meta) as read:
            built = serving.load_folder(str(directory), (architectures or [""])[0], meta=on_meta,
                                        load_format="safetensors")
        return built, read

    return weights.load_row(folder, TITLE, attempt, data=data)


@contextlib.contextmanager
def headers_only(replace: bool = True) -> Iterator[weights.Reading]:
    """For the block: SGLang's safetensors reader (`replace`) replaced by one that yields meta
    tensors of the headers, and what the model's load_weights returns kept."""
    import importlib

    serving_reads = importlib.import_module(_LOADER)
    loader = serving_reads.DefaultModelLoader
    real_reader, real_only = serving_reads.safetensors_weights_iterator, loader.load_weights_only
    reading = weights.Reading()

    def from_headers(hf_weights_files, *args, **kwargs):
        return reading.meta_tensors(hf_weights_files)

    def load_weights_only(model, weights_iterator, target_device):
        own = model.load_weights

        def tracked(*args, **kwargs):
            loaded = own(*args, **kwargs)
            reading.track(model, loaded)
            return loaded

        model.load_weights = tracked
        try:
            return real_only(model, weights_iterator, target_device)
        finally:
            del model.load_weights

    serving_reads.safetensors_weights_iterator = from_headers if replace else real_reader
    loader.load_weights_only = staticmethod(load_weights_only)
    try:
        yield reading
    finally:
        serving_reads.safetensors_weights_iterator = real_reader
        loader.load_weights_only = staticmethod(real_only)
