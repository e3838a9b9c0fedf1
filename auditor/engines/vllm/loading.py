"""vLLM's own weight loader, on the meta device, fed a checkpoint's safetensors headers (needs vLLM).

The `weights` check's engine row (`weights/vllm`): does vLLM's loader place every tensor of a
checkpoint folder, the tiny checkpoint the check saved (under this release or an older one) or
the user's `--checkpoint`. It is vLLM's get_model as the serves row runs it (native.py: the one-
process group, ModelConfig(model_impl="auto"), VllmConfig on the CPU platform), but with
`LoadConfig(load_format="safetensors", device="meta")` on a folder holding the checkpoint's own
config.json (verbatim) and its weight files (linked, not copied), and one difference: vLLM's
reader of safetensors data (`safetensors_weights_iterator`, model_loader/weight_utils.py, as
default_loader.py calls it) is stood in for by one that yields, for each tensor of the headers,
a meta tensor of its name, shape and dtype (`headers_only`), so no data is read. Every other step
is vLLM's, in its order (model_loader/base_loader.py load_model, default_loader.py load_weights):
the model built on the meta device; DefaultModelLoader's choice of files (`_prepare_weights`,
its index filter); the model's own `load_weights` (a native class's stacked-parameter mapping
and each parameter's `weight_loader`, which checks shapes; the Transformers backend's
AutoWeightsLoader and its hf_to_vllm_mapper); `track_weights_loading`, which refuses a parameter
the checkpoint left unset ("Following weights were not initialized from checkpoint"); then
`process_weights_after_loading`.

The verdicts are every engine's (auditor/engines/weights.py). A parameter that vLLM's model's
load_weights does not report loaded is named (`keys`, `unset_parameters`) even where vLLM's own
check exempts it: track_weights_loading exempts every parameter of a module whose quant method
post-processes weights, which an unquantized linear layer's does (default_loader.py:562-613), so
a linear weight the checkpoint lacks stays unset without its refusal. Where the meta device stops
vLLM's loading (bert's, olmo3's), a tiny checkpoint is loaded again on the CPU with its data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from auditor.engines import weights

TITLE = "vLLM"
# Where vLLM's loading reads a checkpoint's data; the name default_loader.py calls it by
_READER = "vllm.model_executor.model_loader.default_loader"


def outcome(case, context, folder: Path):
    """The engine's `loads_weights` (auditor.engines.interface.Engine): vLLM's loader on the
    checkpoint in `folder`, as a row's outcome."""
    from auditor.engines.vllm.constructor import classes_restored

    classes = ()
    if not case.checkpoint and context.plain_failure() is None:
        classes = tuple({type(m): None for m in context.model().modules()})
    with classes_restored(classes):
        return load(folder, case.model_type, trust_remote_code=bool(case.remote_code), data=not case.checkpoint)


def load(folder: Path, model_type: str, trust_remote_code: bool = False, data: bool = False):
    """vLLM's get_model with its safetensors loader on the checkpoint in `folder`, headers only
    (`data`: on the CPU with the data where the meta device stops it): a row's outcome."""
    from auditor.engines.vllm import native

    def attempt(checkpoint: Path, files, on_meta: bool):
        with weights.staged(checkpoint, files) as directory, headers_only(replace=on_meta) as read:
            built = native.load_checkpoint(directory, model_type, trust_remote_code, device="meta" if on_meta else "cpu")
        return built, read

    return weights.load_row(folder, TITLE, attempt, data=data)


@contextlib.contextmanager
def headers_only(replace: bool = True) -> Iterator[weights.Reading]:
    """For the block: vLLM's safetensors reader (`replace`) replaced by one that yields meta
    tensors of the headers (weights.Reading.meta_tensors), in its order of files; and what the
    model's load_weights returned kept before vLLM's track_weights_loading adds its exemptions."""
    import importlib

    module = importlib.import_module(_READER)
    real_reader, loader = module.safetensors_weights_iterator, module.DefaultModelLoader
    real_track = loader.track_weights_loading
    reading = weights.Reading()

    def from_headers(hf_weights_files, *args, **kwargs):
        return reading.meta_tensors(hf_weights_files)

    def track(self, model, loaded_weights, *args, **kwargs):
        reading.track(model, loaded_weights)
        return real_track(self, model, loaded_weights, *args, **kwargs)

    module.safetensors_weights_iterator, loader.track_weights_loading = from_headers if replace else real_reader, track
    try:
        yield reading
    finally:
        module.safetensors_weights_iterator, loader.track_weights_loading = real_reader, real_track
