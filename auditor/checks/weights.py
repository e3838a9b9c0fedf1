"""The `weights` check: does a saved checkpoint load, map every key and give the same outputs.

For a model type: its tiny model (auditor.models.tiny; its causal-LM head where the type has
one, so that a head weight is saved and loaded too) is run on one seeded input in float32 on the
CPU, saved with its own `save_pretrained` (safetensors) beside that input and those outputs, then
loaded with `from_pretrained(output_loading_info=True)` and run again. Alone, both happen under
this transformers (the row says whether a save and a load of one release agree); with
`--weights-save DIR` the checkpoint stays in DIR/TYPE; with `--weights-from DIR` (a folder
another run saved, under an older release: upgrade-check's base side) nothing is saved: that
folder's checkpoint is loaded here and compared with the outputs saved there.

For a `--checkpoint DIR`: the safetensors headers only, mapped by transformers' own loading rules
onto the model built on the meta device at full size (auditor.models.checkpoints).

Verdicts: same, loaded (a checkpoint's headers, every key placed), different-outputs, keys,
config-refused, type-removed, load-error, forward-error; what raised is named with its file:line.
A difference is never a flake: the input is seeded, the run deterministic, --reruns leaves it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from auditor import engines
from auditor.checks import Options, register
from auditor.checks.interface import CaseContext, Check
from auditor.core.classifier import Phase, classify
from auditor.core.fault import Fault
from auditor.core.messages import message_of, signature_of
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.models.cases import ModelCase
from auditor.models.logs import quiet_transformers

# The input and the outputs, saved beside the checkpoint, in a folder of their own: a loader that
# reads every *.safetensors of the folder (vLLM's) or --checkpoint on it meets the model's alone.
REFERENCE = "auditor-reference/tensors.safetensors"
REFERENCE_INFO = "auditor-reference.json"  # which class, which release, which input names
LENGTH = 64  # tokens of the one input: past the tiny sliding windows and chunk sizes
SEED = 0
# (absolute, relative) tolerance of the outputs, per dtype: float32 on the CPU is deterministic,
# so this only forgives a reordered sum.
TOLERANCE = {"float32": (1e-4, 1e-4)}


def loaders() -> tuple:
    """The installed engines whose own weight loader answers (`Engine.loads_weights`): each gives
    a row `weights/<engine>`."""
    return tuple(engine for engine in engines.all() if engine.loads_weights is not None and engine.installed)


@register
class WeightsCheck(Check):
    name = "weights"
    runs_models = True
    across_releases = True

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        """The cells `run` fills: transformers' row and one per installed engine loader."""
        return [Result.failed(case.model_type, self.name, failure),
                *(Result.failed(case.model_type, self.name, failure, component=e.name) for e in loaders())]

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        start = time.perf_counter()
        if case.checkpoint:
            outcome = self._headers(case, context)
            yield self._row(case, outcome, start)
            yield from self._engines(case, context, Path(case.checkpoint), outcome)
            return
        options = context.options
        if options.weights_from:
            folder = Path(options.weights_from) / case.model_type
            outcome = compare(folder)
            yield self._row(case, outcome, start)
            yield from self._engines(case, context, folder, outcome)
            return
        plain = context.plain_failure()
        if plain is not None:
            yield from self.failed_rows(case, options, plain)
            return
        with _folder(options.weights_save, case.model_type) as folder:
            saved = save(context.config(), folder, case)
            outcome = saved if saved is not None else compare(folder)
            yield self._row(case, outcome, start)
            yield from self._engines(case, context, folder, outcome)

    def _engines(self, case: ModelCase, context: CaseContext, folder: Path, here) -> Iterator[Result]:
        """Each installed engine's own weight loader on the checkpoint in `folder`: where no
        checkpoint is there to load (transformers' row skipped for want of one), the same skip."""
        for engine in loaders():
            start = time.perf_counter()
            if not case.checkpoint and not (folder / REFERENCE_INFO).is_file():
                why = here.message if isinstance(here, Failure) else here[1]
                outcome = Status.SKIPPED, f"no checkpoint to load ({why})", {}
            else:
                try:
                    outcome = engine.loads_weights(case, context, folder)
                except Exception as exc:  # what the engine's loading raised: judged by the one rule
                    outcome = classify(exc, Phase.ENGINE, engine_package=engine.package)
                outcome = _lacking(outcome, here)
            row = self._row(case, outcome, start)
            yield dataclasses.replace(row, component=engine.name,
                                      extras={**row.extras, "engine_version": engine.version})

    def _row(self, case: ModelCase, outcome, start: float) -> Result:
        seconds = time.perf_counter() - start
        if isinstance(outcome, Failure):
            return Result.failed(case.model_type, self.name, outcome, seconds=seconds)
        status, message, extras = outcome
        return Result(case.model_type, self.name, status, message=message,
                      signature="" if status.ok or status is Status.SKIPPED else signature_of(message),
                      seconds=seconds, extras=extras)

    def _headers(self, case: ModelCase, context: CaseContext):
        """A checkpoint's headers mapped onto its model on the meta device."""
        from auditor.models.checkpoints import (
            CheckpointError,
            checkpoint_tensors,
            describe_keys,
            map_onto_meta,
        )

        try:
            config = context.config()
        except Exception as exc:
            return _failure(exc, Status.CONFIG_REFUSED, Phase.CONFIG)
        try:
            tensors = checkpoint_tensors(Path(case.checkpoint))
        except CheckpointError as exc:
            return Failure(Status.LOAD_ERROR, str(exc), signature_of(str(exc)))
        try:
            mapped = map_onto_meta(config, tensors)
        except NotImplementedError as exc:
            return Status.SKIPPED, str(exc), {}
        except Exception as exc:
            return _failure(exc, Status.LOAD_ERROR)
        extras = {"model_class": mapped.model_class, "tensors": mapped.tensors}
        if mapped.conversion_errors:
            names = describe_keys(f"{k}: {v}" for k, v in mapped.conversion_errors.items())
            return Status.LOAD_ERROR, f"{mapped.model_class}: conversion failed for {names}", extras
        if not mapped.clean:
            return Status.KEYS, _keys_message(mapped.missing, mapped.unexpected, mapped.mismatched), \
                {**extras, **_keys_extras(mapped.missing, mapped.unexpected, mapped.mismatched)}
        return Status.LOADED, f"{mapped.model_class}: {mapped.tensors} tensors mapped from the headers", extras


@contextlib.contextmanager
def _folder(save_root: str, model_type: str):
    if save_root:
        folder = Path(save_root) / model_type
        folder.mkdir(parents=True, exist_ok=True)
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix="auditor-weights-") as tmp:
        yield Path(tmp)


def save(config, folder: Path, case: ModelCase):
    """The type's tiny model run on the seeded input and saved into `folder` with that input and
    its outputs; a (status, message, extras) outcome or a Failure when that cannot be done."""
    import torch
    import transformers
    from safetensors.torch import save_file

    from auditor.models.inputs import CannotFeed, main_inputs
    from auditor.models.tiny import ShrinkError, tiny_model

    try:
        tiny = tiny_model(config, "cpu", trust_remote_code=bool(case.remote_code), dtype="float32")
    except ShrinkError as exc:
        return Status.SKIPPED, f"cannot shrink: {exc}", {}
    except Exception as exc:
        return classify(exc)
    auto, model, changed = _with_head(tiny)
    try:
        inputs, described = main_inputs(model, LENGTH, seed=SEED)
    except CannotFeed as exc:
        return Status.SKIPPED, f"no input to compare outputs on: {exc}", {}
    output, inputs = _reference_forward(model, inputs)
    if isinstance(output, BaseException):
        # The saving release's own forward on the check's token input: no checkpoint to compare,
        # and no verdict of this check's (the input may not be one the model takes: pixel values,
        # boxes; whether the model runs is the build and tiny checks' verdict).
        message = f"no outputs to compare on: the saving release's forward on {described} raised {message_of(output)}"
        return Status.SKIPPED, message, {}
    model.save_pretrained(folder, safe_serialization=True)
    tensors = {f"input.{k}": v.contiguous() for k, v in inputs.items() if isinstance(v, torch.Tensor)}
    (folder / REFERENCE).parent.mkdir(exist_ok=True)
    save_file({**tensors, "output": output.detach().float().contiguous()}, str(folder / REFERENCE))
    info = {"model_type": case.model_type, "auto_class": auto, "model_class": type(model).__name__,
            "transformers": transformers.__version__, "length": LENGTH, "seed": SEED, "dtype": "float32",
            "input": described,
            "kwargs": {k: v for k, v in inputs.items() if not isinstance(v, torch.Tensor)},
            "exercised": {k: list(v) for k, v in changed.items()}}
    (folder / REFERENCE_INFO).write_text(json.dumps(info, indent=1), encoding="utf-8")
    return None


def _with_head(tiny) -> tuple[str, object, dict]:
    """The tiny model with the type's causal-LM head where it has one (the same seed), else the
    base model, on its config `exercised` (every window shorter than the input, every block type
    of a repeating pattern present): the auto class's name, the model, and what was changed. Where
    the exercised config does not build, the tiny config as it shrank."""
    import copy

    from auditor.models.tiny.exercise import as_saved, exercised

    config, changed = as_saved(*exercised(copy.deepcopy(tiny.config), LENGTH))
    for candidate, changes in ((config, changed), (tiny.config, {})):
        built = _build(candidate)
        if built is not None:
            return (*built, changes)
    return "AutoModel", tiny.model, {}


def _reference_forward(model, inputs: dict):
    """The saving release's outputs on `inputs` as a user's call gives them: the model's own
    defaults (its cache on where its config says so, as in `model(ids)` and `generate`; the first
    forward's logits of doge under 4.57.6 differ with it on and off, by 0.64), and with
    `use_cache=False` only where that default forward raises. Returns (output, the inputs it ran
    on) or (the exception, inputs)."""
    import torch

    defaults = {k: v for k, v in inputs.items() if k != "use_cache"}
    tries = (defaults, inputs) if "use_cache" in inputs else (inputs,)
    for feed in tries:
        try:
            with torch.no_grad():
                torch.manual_seed(SEED)  # a forward that samples (vits' noise) samples the same on both sides
                return _first_output(model(**feed)), feed
        except Exception as exc:
            raised = exc
    return raised, inputs


def _build(config):
    import torch
    from transformers import AutoModel, AutoModelForCausalLM
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    for auto in ((AutoModelForCausalLM,) if getattr(config, "model_type", "") in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
                 else ()) + (AutoModel,):
        torch.manual_seed(SEED)
        try:
            return auto.__name__, auto.from_config(config, dtype=torch.float32).eval()
        except Exception:
            continue  # its head does not build at this size: the base model's outputs still say it
    return None


def _first_output(output):
    """The tensor a comparison uses: logits, else the last hidden state, else the first tensor."""
    import torch

    for name in ("logits", "last_hidden_state"):
        value = getattr(output, name, None)
        if isinstance(value, torch.Tensor):
            return value
    values = output.values() if hasattr(output, "values") else output if isinstance(output, tuple) else [output]
    for value in values:
        if isinstance(value, torch.Tensor):
            return value
    raise TypeError(f"the forward returned no tensor ({type(output).__name__})")


def compare(folder: Path):
    """Load the checkpoint saved in `folder` with this transformers and run it on the saved
    input: a (status, message, extras) outcome or a Failure, each with what was saved, by
    which release, and the input."""
    info_path = folder / REFERENCE_INFO
    if not info_path.is_file():
        message = f"no checkpoint saved in {folder} (the saving run's weights row says why)"
        return Status.SKIPPED, message, {}
    info = json.loads(info_path.read_text(encoding="utf-8"))
    extras = {"saved_by": info["transformers"], "saved_class": info["model_class"],
              "input": info.get("input", f"{info['length']} seeded tokens (seed {info['seed']})") + ", float32, cpu"
                       + "".join(f", {k}={v}" for k, v in sorted(info.get("kwargs", {}).items()))}
    if info.get("exercised"):  # the config fields the saving run changed from the tiny config (`exercised`)
        extras["exercised"] = info["exercised"]
    outcome = _compare(folder, info, extras)
    if isinstance(outcome, Failure):
        return dataclasses.replace(outcome, extras={**outcome.extras, **extras})
    return outcome


def _compare(folder: Path, info: dict, extras: dict):
    import torch
    import transformers
    from safetensors.torch import load_file
    try:
        config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    except Exception as exc:
        if _unknown_type(exc):
            return _failure(exc, Status.TYPE_REMOVED, Phase.CONFIG, f"{info['model_type']} is not a model type here: ")
        return _failure(exc, Status.CONFIG_REFUSED, Phase.CONFIG)
    auto = getattr(transformers, info["auto_class"])
    try:
        with quiet_transformers():
            try:
                model, loading = auto.from_pretrained(folder, config=config, output_loading_info=True,
                                                      local_files_only=True)
            except RuntimeError as exc:
                if "ignore_mismatched_sizes" not in str(exc):
                    raise
                # It refuses weights of another shape, after naming them: loaded again to have their names.
                model, loading = auto.from_pretrained(folder, config=config, output_loading_info=True,
                                                      local_files_only=True, ignore_mismatched_sizes=True)
    except Exception as exc:
        if _unknown_class(exc) and not _known_type(info["model_type"]):
            return _failure(exc, Status.TYPE_REMOVED, prefix=f"{info['auto_class']} has no class for "
                                                             f"{info['model_type']} here: ")
        if _unknown_class(exc):  # the type is here, but its auto class cannot load what its class saved
            return _failure(exc, Status.LOAD_ERROR, prefix=f"{info['auto_class']} cannot load what "
                                                           f"{info['model_class']} saved: ")
        return _failure(exc, Status.LOAD_ERROR)
    missing, unexpected = sorted(loading.get("missing_keys", ())), sorted(loading.get("unexpected_keys", ()))
    mismatched = sorted((k, tuple(a), tuple(b)) for k, a, b in loading.get("mismatched_keys", ()))
    extras["model_class"] = type(model).__name__
    if missing or unexpected or mismatched:
        return Status.KEYS, _keys_message(missing, unexpected, mismatched), \
            {**extras, **_keys_extras(missing, unexpected, mismatched)}
    saved = load_file(str(folder / REFERENCE))
    inputs = {k.removeprefix("input."): v for k, v in saved.items() if k.startswith("input.")}
    inputs.update(info.get("kwargs", {}))
    try:
        with torch.no_grad():
            torch.manual_seed(SEED)
            output = _first_output(model.float().eval()(**inputs)).detach().float()
    except Exception as exc:
        return _failure(exc, Status.FORWARD_ERROR, Phase.EAGER)
    reference = saved["output"]
    atol, rtol = TOLERANCE[info["dtype"]]
    tolerance = f"atol {atol:g}, rtol {rtol:g} ({info['dtype']})"
    extras["tolerance"] = tolerance
    if output.shape != reference.shape:
        return Status.DIFFERENT_OUTPUTS, (f"output shape {tuple(output.shape)} here, {tuple(reference.shape)} "
                                          f"under transformers {info['transformers']}"), extras
    difference = (output - reference).abs()
    largest = float(difference.max()) if difference.numel() else 0.0
    relative = float((difference / reference.abs().clamp_min(1e-12)).max()) if difference.numel() else 0.0
    extras.update(max_abs_diff=largest, max_rel_diff=relative)
    if not torch.allclose(output, reference, atol=atol, rtol=rtol):
        return Status.DIFFERENT_OUTPUTS, (f"every key loaded, but the outputs differ from those saved under "
                                          f"transformers {info['transformers']}: max abs diff {largest:.3g}, "
                                          f"max rel diff {relative:.3g} ({tolerance})"), extras
    return Status.SAME, (f"{type(model).__name__}: every key loaded, outputs equal to those saved under transformers "
                         f"{info['transformers']} (max abs diff {largest:.2g}; {tolerance})"), extras


def _unknown_type(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, (KeyError, ValueError)) and (
        "does not recognize this architecture" in text or "Unrecognized model" in text
        or (isinstance(exc, KeyError) and "model_type" not in text))


def _known_type(model_type: str) -> bool:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return model_type in CONFIG_MAPPING_NAMES


def _unknown_class(exc: BaseException) -> bool:
    return isinstance(exc, ValueError) and "Unrecognized configuration class" in str(exc)


def _failure(exc: BaseException, status: Status, phase: Phase = Phase.BUILD, prefix: str = "") -> Failure:
    """The weights check's verdict on what raised: `status` with the message and where it was
    raised, unless the classifier knows better (the auditor's own bug, a package this machine lacks)."""
    failure = classify(exc, phase)
    if failure.environmental or failure.status is Status.AUDITOR_ERROR:
        return failure
    at = failure.extras.get("raised_at", "")
    message = f"{prefix}{failure.message}{f' [raised at {at}]' if at else ''}"
    return Failure(status, message, signature_of(failure.message), failure.fault,
                   failure.extras)


def _lacking(engine, here):
    """An engine's verdict that it leaves parameters unset, where transformers' own loading of the
    same checkpoint finds keys missing too: the checkpoint lacks them (the model's), not the
    engine's mapping; the engine's row still says the engine serves it with those unset."""
    if not (isinstance(engine, Failure) and engine.status is Status.KEYS and engine.extras.get("unset_parameters")):
        return engine
    missing = here[2].get("missing_keys") if isinstance(here, tuple) else here.extras.get("missing_keys")
    if not missing:
        return engine
    message = f"{engine.message}; transformers finds {len(missing)} keys missing from this checkpoint too"
    return dataclasses.replace(engine, message=message, fault=Fault.MODEL)


def _keys_message(missing, unexpected, mismatched) -> str:
    from auditor.models.checkpoints import describe_keys

    parts = []
    if missing:
        parts.append(f"{len(missing)} missing ({describe_keys(missing)})")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected ({describe_keys(unexpected)})")
    if mismatched:
        parts.append(f"{len(mismatched)} of another shape ("
                     + describe_keys(f"{k}: {list(a)} saved, {list(b)} here" for k, a, b in mismatched) + ")")
    return "keys: " + "; ".join(parts)


def _keys_extras(missing, unexpected, mismatched) -> dict:
    return {"missing_keys": list(missing)[:50], "unexpected_keys": list(unexpected)[:50],
            "mismatched_keys": [[k, list(a), list(b)] for k, a, b in mismatched][:50]}
