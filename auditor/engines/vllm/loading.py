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

Verdicts: `loaded` (every tensor placed, every parameter set); `keys` where vLLM's loading
cannot map a name, leaves a parameter unset, or meets another shape, with vLLM's message and the
file:line that raised it; where the meta device stops vLLM's code (`.item()` on a weight, a copy
out of meta: bert's, olmo3's), a tiny checkpoint the check saved is loaded again on the CPU with
its data (a few MB; the row's `data_read` and `meta_limit` say so), and a user's `--checkpoint`
row is `undecided` (this machine's limit: only its data would decide it); other failures are
judged by the one fault rule (core.classifier, Phase.ENGINE). A parameter that vLLM's
load_weights does not report loaded is named (`keys`, `unset_parameters`) even where vLLM's
own check exempts it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from auditor.core.fault import Fault
from auditor.core.messages import signature_of
from auditor.core.status import Failure, Status
from auditor.models import checkpoints

# Where vLLM's loading reads a checkpoint's data; the name default_loader.py calls it by
_READER = "vllm.model_executor.model_loader.default_loader"
# What vLLM's loading raises when a name or a shape does not fit: the names' verdict (`keys`)
_KEY_WORDS = ("not initialized from checkpoint", "no module or parameter named", "size mismatch",
              "shape mismatch", "attempted to load weight", "does not match", "exceeds dimension size",
              "must match the size")


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
    """vLLM's get_model with its safetensors loader on the checkpoint in `folder`, headers only:
    (status, message, extras) or a Failure. `data`: where the meta device stops vLLM's loading
    (a weight copied out of meta), it is run again on the CPU with the checkpoint's data (the tiny
    checkpoints the check saved, a few MB; never a user's `--checkpoint`), and the row says so."""
    try:
        files = checkpoints.weight_files(folder)
    except checkpoints.CheckpointError as exc:
        return Failure(Status.LOAD_ERROR, str(exc), signature_of(str(exc)))
    if not (folder / checkpoints.CONFIG).is_file():
        message = f"{folder}: no {checkpoints.CONFIG}"
        return Failure(Status.LOAD_ERROR, message, signature_of(message))
    served, read = _load(folder, files, model_type, trust_remote_code, on_meta=True)
    extras = {"data_read": "none: meta tensors of the headers' shapes"}
    if data and _meta_limit(served):
        meta = served
        served, read = _load(folder, files, model_type, trust_remote_code, on_meta=False)
        extras = {"data_read": "the tiny checkpoint's, on the CPU", "meta_limit": meta.message}
    extras = {**served.extras(), "tensors": read.tensors or len(checkpoints.checkpoint_tensors(folder)), **extras}
    if served.failure is None and read.unset:
        names = checkpoints.describe_keys(read.unset)
        extras["unset_parameters"] = list(read.unset)[:50]
        message = (f"keys: vLLM's loader leaves {len(read.unset)} parameters of {served.served} unset ({names}): its "
                   f"load_weights did not report them loaded, and its track_weights_loading exempts them")
        return Failure(Status.KEYS, message, signature_of(message), Fault.ENGINE, extras)
    if served.failure is None:
        where = "from the headers" if extras["data_read"].startswith("none") else "read on the CPU"
        return Status.LOADED, (f"vLLM's loader placed every tensor: {served.impl} {served.served}, "
                               f"{extras['tensors']} tensors {where}"), extras
    failure = _verdict(served)
    return dataclasses.replace(failure, extras={**extras, **failure.extras})


def _load(folder: Path, files, model_type: str, trust_remote_code: bool, on_meta: bool):
    """(Served, Reading) of vLLM's get_model on a folder of the checkpoint's config.json (copied)
    and weight files (linked): on the meta device from the headers, or on the CPU with the data."""
    from auditor.engines.vllm import native

    directory = Path(tempfile.mkdtemp(prefix="auditor-vllm-weights-"))
    try:
        shutil.copyfile(folder / checkpoints.CONFIG, directory / checkpoints.CONFIG)
        if (folder / checkpoints.INDEX).is_file():
            os.symlink((folder / checkpoints.INDEX).resolve(), directory / checkpoints.INDEX)
        for path in files:
            os.symlink(path.resolve(), directory / path.name)
        with headers_only(replace=on_meta) as read:
            served = native.load_checkpoint(directory, model_type, trust_remote_code,
                                            device="meta" if on_meta else "cpu")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return served, read


def _meta_limit(served) -> bool:
    """Whether the meta device, not vLLM, stopped its loading (a weight copied out of meta, `.item()` on one)."""
    return served.failure is not None and served.status is Status.UNDECIDED and "meta tensor" in served.message.lower()


def _verdict(served) -> Failure:
    """A stop of vLLM's loading as the weights row says it: the names' (`keys`) where vLLM's
    loader could not place a tensor; the meta device's (`undecided`); else the classifier's."""
    failure = served.failure
    if failure.status is Status.UNDECIDED or failure.environmental or failure.status is Status.AUDITOR_ERROR:
        return failure
    at = failure.extras.get("raised_at", "")
    where = f" [raised at {at}]" if at and at not in failure.message else ""
    message = f"vLLM's loader: {failure.message}{where}"
    status = Status.KEYS if served.step == "weights" and _about_names(failure) else (
        Status.LOAD_ERROR if failure.status in (Status.ERROR, Status.CRASH) else failure.status)
    return Failure(status, message, signature_of(failure.message), failure.fault, failure.extras)


def _about_names(failure: Failure) -> bool:
    text = failure.message.lower()
    return text.startswith("keyerror") or any(word in text for word in _KEY_WORDS)


@dataclass
class Reading:
    """What the stand-in reader gave vLLM's loading and what the model said it loaded."""

    tensors: int = 0
    # The model's parameters its own load_weights did not report loaded (None: vLLM did not track
    # them, as for a quantized model): what track_weights_loading checks before its exemptions.
    unset: tuple[str, ...] | None = None


@contextlib.contextmanager
def headers_only(replace: bool = True) -> Iterator[Reading]:
    """For the block: vLLM's safetensors reader replaced by one that reads only the headers and
    yields meta tensors of their shapes and dtypes, in vLLM's order of files (sorted, as its own
    reader sorts them); and vLLM's `track_weights_loading` given what the model's load_weights
    returned, as it is, after the Reading keeps a copy (vLLM's check then adds its exemptions:
    every parameter of a module whose quant method post-processes weights, which an unquantized
    linear layer's does, default_loader.py:562-613, so a linear weight the checkpoint lacks stays
    unset without its refusal; the row names such a parameter)."""
    import importlib

    import torch

    module = importlib.import_module(_READER)
    real_reader, loader = module.safetensors_weights_iterator, module.DefaultModelLoader
    real_track = loader.track_weights_loading
    reading = Reading()

    def from_headers(hf_weights_files, *args, **kwargs):  # `replace`: in place of vLLM's reader
        for name in sorted(hf_weights_files):
            for key, tensor in checkpoints.read_header(Path(name)).items():
                reading.tensors += 1
                yield key, torch.empty(tensor.shape, dtype=getattr(torch, tensor.dtype), device="meta")

    def track(self, model, loaded_weights, *args, **kwargs):
        if loaded_weights is not None:
            reading.unset = tuple(sorted({name for name, _ in model.named_parameters()} - set(loaded_weights)))
        return real_track(self, model, loaded_weights, *args, **kwargs)

    module.safetensors_weights_iterator, loader.track_weights_loading = from_headers if replace else real_reader, track
    try:
        yield reading
    finally:
        module.safetensors_weights_iterator, loader.track_weights_loading = real_reader, real_track
