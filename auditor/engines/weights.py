"""What every engine's weight-loading row (`weights/<engine>`, the weights check) does the same
way, in one place: the checkpoint folder staged for the engine's loader, the meta tensors that
stand in for its data, the parameters the model's own load_weights did not report loaded, and the
verdict of what the engine's loading made of it. Each engine's folder has the engine's own steps
(auditor/engines/vllm/loading.py, auditor/engines/sglang/loading.py); an engine never imports
another's.

Verdicts: `loaded` (every tensor placed, every parameter reported loaded); `keys` where the
engine's loading cannot map a name, meets another shape, or leaves a parameter unset (named:
`unset_parameters`), with the engine's message and the file:line that raised it; where the meta
device stops the engine's code (a weight copied out of meta, `.item()` on one), a tiny checkpoint
the check saved is loaded again on the CPU with its data (`data_read`, `meta_limit` say so), and a
user's `--checkpoint` row is `undecided` (only its data would decide it); anything else is judged
by the one fault rule (core.classifier at Phase.ENGINE), as the engine's step that raised.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from auditor.core.fault import Fault
from auditor.core.messages import signature_of
from auditor.core.status import Failure, Status
from auditor.models import checkpoints

WEIGHTS = "weights"  # the engines' step name of their weight loading (a build's `step`)
FROM_HEADERS = "none: meta tensors of the headers' shapes"
ON_THE_CPU = "the tiny checkpoint's, on the CPU"
# What the meta device's limits say when they stop an engine's code
_META = re.compile(r"\bmeta (tensor|device)|cannot be meta|on (the )?meta\b|out of meta")
# What an engine's loading raises when a name or a shape does not fit: the names' verdict (`keys`)
_KEY_WORDS = ("not initialized from checkpoint", "no module or parameter named", "size mismatch",
              "shape mismatch", "attempted to load weight", "does not match", "exceeds dimension size",
              "must match the size", "could not be matched")


@dataclass
class Reading:
    """What the stand-in reader gave an engine's loading, and what its model said it loaded."""

    tensors: int = 0
    # The model's parameters its own load_weights did not report loaded (None: not tracked).
    unset: tuple[str, ...] | None = None

    def meta_tensors(self, files) -> Iterator[tuple[str, object]]:
        """(name, meta tensor of the header's shape and dtype) for each tensor of `files`, in the
        order an engine's own reader gives them (files sorted by name); counted."""
        import torch

        for name in sorted(str(f) for f in files):
            for key, tensor in checkpoints.read_header(Path(name)).items():
                self.tensors += 1
                yield key, torch.empty(tensor.shape, dtype=getattr(torch, tensor.dtype), device="meta")

    def track(self, model, loaded) -> None:
        """Keep which of `model`'s parameters the `loaded` names (its load_weights' answer) leave out."""
        if loaded is not None:
            self.unset = tuple(sorted({name for name, _ in model.named_parameters()} - set(loaded)))


@contextlib.contextmanager
def staged(folder: Path, files) -> Iterator[Path]:
    """A folder for the engine's loader: the checkpoint's config.json (copied, verbatim), its index
    and its weight files (linked, not copied), and nothing else of `folder` (the weights check's
    reference tensors stay out of a loader that reads every *.safetensors)."""
    directory = Path(tempfile.mkdtemp(prefix="auditor-engine-weights-"))
    try:
        shutil.copyfile(folder / checkpoints.CONFIG, directory / checkpoints.CONFIG)
        if (folder / checkpoints.INDEX).is_file():
            os.symlink((folder / checkpoints.INDEX).resolve(), directory / checkpoints.INDEX)
        for path in files:
            os.symlink(Path(path).resolve(), directory / Path(path).name)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def load_row(folder: Path, title: str, attempt: Callable[[Path, list, bool], tuple], data: bool = False):
    """The engine's weights row on the checkpoint in `folder`: `attempt(folder, files, on_meta)`
    -> (build, Reading) runs the engine's own loading (a build with `failure`, `step`, `served`,
    `message` and `extras()`), on the meta device from the headers, and, where `data` (a tiny
    checkpoint the check saved) and the meta device stopped it, on the CPU with the data.
    (status, message, extras) or a Failure."""
    try:
        files = checkpoints.weight_files(folder)
    except checkpoints.CheckpointError as exc:
        return Failure(Status.LOAD_ERROR, str(exc), signature_of(str(exc)))
    if not (folder / checkpoints.CONFIG).is_file():
        message = f"{folder}: no {checkpoints.CONFIG}"
        return Failure(Status.LOAD_ERROR, message, signature_of(message))
    built, read = attempt(folder, files, True)
    extras = {"data_read": FROM_HEADERS}
    placed = built.failure is None
    if not placed and meta_limit(built) and read.unset is not None:
        # The model's load_weights returned (every name placed, or those left named): what the
        # meta device stopped is the processing after it, which is about devices, not names.
        extras["not_run"] = f"{title}'s processing after loading: {built.failure.message}"
        placed, built = True, dataclasses.replace(built, served=built.served or built.architecture)
    elif data and meta_limit(built):
        meta = built
        built, read = attempt(folder, files, False)
        placed = built.failure is None
        extras = {"data_read": ON_THE_CPU, "meta_limit": meta.message}
    extras = {**built.extras(), "tensors": read.tensors or len(checkpoints.checkpoint_tensors(folder)), **extras}
    impl = getattr(built, "impl", "") or built.extras().get("impl", "")
    if placed and read.unset:
        names = checkpoints.describe_keys(read.unset)
        extras["unset_parameters"] = list(read.unset)[:50]
        message = (f"keys: {title}'s loader leaves {len(read.unset)} parameters of {built.served} unset ({names}): "
                   "its model's load_weights did not report them loaded")
        return Failure(Status.KEYS, message, signature_of(message), Fault.ENGINE, extras)
    if placed:
        where = "from the headers" if extras["data_read"] == FROM_HEADERS else "read on the CPU"
        return Status.LOADED, (f"{title}'s loader placed every tensor: {impl} {built.served}, "
                               f"{extras['tensors']} tensors {where}"), extras
    failure = _on_meta(built, title) if meta_limit(built) else verdict(built, title)
    return dataclasses.replace(failure, extras={**extras, **failure.extras})


def meta_limit(built) -> bool:
    """Whether the meta device, not the engine, stopped its loading: a weight copied out of meta,
    `.item()` on one, a step that refuses a meta device (SGLang's post-load processing,
    post_load.py:129 "process_device cannot be meta")."""
    failure = built.failure
    return failure is not None and failure.status is not Status.KEYS and bool(_META.search(failure.message))


def _on_meta(built, title: str) -> Failure:
    text = f"environment limit (the meta device stopped {title}'s loading: {built.failure.message})"
    return Failure(Status.UNDECIDED, text, signature_of(text), Fault.ENVIRONMENT, dict(built.failure.extras))


def verdict(built, title: str) -> Failure:
    """A stop of the engine's loading as the weights row says it: the names' (`keys`) where its
    loading could not place a tensor; this machine's (`undecided`) and the auditor's as they are;
    else the classifier's, a plain error read as `load-error`."""
    failure = built.failure
    if failure.status is Status.UNDECIDED or failure.environmental or failure.status is Status.AUDITOR_ERROR:
        return failure
    at = failure.extras.get("raised_at", "")
    where = f" [raised at {at}]" if at and at not in failure.message else ""
    message = f"{title}'s loader: {failure.message}{where}"
    status = Status.KEYS if built.step == WEIGHTS and _about_names(failure) else (
        Status.LOAD_ERROR if failure.status in (Status.ERROR, Status.CRASH) else failure.status)
    return Failure(status, message, signature_of(failure.message), failure.fault, failure.extras)


def _about_names(failure: Failure) -> bool:
    text = failure.message.lower()
    return text.startswith("keyerror") or any(word in text for word in _KEY_WORDS)
