"""The `tokenizer` check: does a tokenizer saved by one release give the same ids under another.

For a model type, each of its tokenizer classes in transformers' tokenizer mapping (under v4 the
fast class and the slow one, under v5 its one class) is given a tiny vocabulary made offline in
the files the class reads (auditor.models.vocabularies), one added special token, one added plain
token and a chat template, then saved with its own `save_pretrained` beside the record of what it
gives on a fixed corpus (auditor.models.tokenization). The saved folder is then loaded with
`AutoTokenizer` (what a user's code calls) and with the class by name, and both are run on the
corpus again and compared with the record.

Alone, both happen under this transformers; with `--weights-save DIR` the saved tokenizers stay
in DIR/TYPE/tokenizer (and DIR/TYPE/tokenizer-slow); with `--weights-from DIR` nothing is saved:
another release's saves are loaded here (upgrade-check's new side, a bisect step).

Rows: `tokenizer` (the class AutoTokenizer defaults to: the fast one where there is one) and
`tokenizer/slow` (v4's slow class beside a fast one). Verdicts: same, different-ids,
different-decode, different-template, load-error, class-removed, needs-package (the package named,
whatever transformers said), type-removed; each with one example (the text, before, after), and
what raised with its file:line. A `--checkpoint DIR` gets the same on its own tokenizer files and
chat template: the record is made and compared within this release, and saved beside nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from auditor.checks import Options, register
from auditor.checks.interface import CaseContext, Check
from auditor.core.classifier import Phase, classify
from auditor.core.fault import Fault
from auditor.core.messages import signature_of
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.models.cases import ModelCase
from auditor.models.logs import quiet_transformers
from auditor.models.tokenization import verdict

RECORD = "auditor-tokenizer.json"  # beside the saved files: the class, the release, the record
FOLDERS = {"": "tokenizer", "slow": "tokenizer-slow"}  # row component -> folder under DIR/TYPE
PROCESSORS = ("image-processor", "feature-extractor")  # rows and folders of the processors
CHECKPOINTS = "checkpoints"  # DIR/checkpoints/NAME/tokenizer: the record of a --checkpoint's own tokenizer
# What a load needs that a machine may lack, by the files of the save: transformers' own message
# then names another package (a slow save without sentencepiece "needs tiktoken").
PACKAGES = (("sentencepiece", "sentencepiece", (".model", ".spm")),
            ("protobuf", "google.protobuf", (".model", ".spm")),
            ("tiktoken", "tiktoken", (".tiktoken",)))


def tokenizer_classes(model_type: str) -> dict[str, str]:
    """{row component: class name} of `model_type` in this release's tokenizer mapping: "" for the
    class AutoTokenizer defaults to, "slow" for v4's slow class beside a fast one."""
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES

    entry = TOKENIZER_MAPPING_NAMES.get(model_type) or _module_class(model_type)
    if isinstance(entry, (tuple, list)):  # v4: (slow, fast)
        slow, fast = (tuple(entry) + (None, None))[:2]
        if fast and slow:
            return {"": fast, "slow": slow}
        return {"": fast or slow} if (fast or slow) else {}
    return {"": entry} if entry else {}


def _module_class(model_type: str) -> str | None:
    """The one tokenizer class the type's own module defines, for a type v5's mapping leaves out
    (llama: AutoTokenizer reads the class from the saved tokenizer_config.json)."""
    import importlib

    from transformers.models.auto.configuration_auto import model_type_to_module_name

    module = model_type_to_module_name(model_type)
    try:
        found = importlib.import_module(f"transformers.models.{module}.tokenization_{module}")
    except Exception:
        return None
    names = [name for name, value in vars(found).items()
             if isinstance(value, type) and name.endswith("Tokenizer") and value.__module__ == found.__name__]
    return names[0] if len(names) == 1 else None


@register
class TokenizerCheck(Check):
    name = "tokenizer"
    across_releases = True

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        """The cells `run` fills for every type: transformers' row and one per tokenizing engine."""
        from auditor.engines.tokenizing import tokenizing_engines

        return [Result.failed(case.model_type, self.name, failure),
                *(Result.failed(case.model_type, self.name, failure, component=e.name) for e in tokenizing_engines())]

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        options = context.options
        if case.checkpoint:
            yield from self._checkpoint(case, context)
            return
        if options.weights_from:
            saved = Path(options.weights_from) / case.model_type
            found = [c for c, folder in FOLDERS.items() if (saved / folder / RECORD).is_file()]
            if not found:
                start = time.perf_counter()
                why = ("this type saved no tokenizer there" if saved.is_dir()
                       else "no tokenizer saved for this type in " + str(options.weights_from))
                yield self._row(case, "", (Status.SKIPPED, why, {}), start)
            for component in found:
                start = time.perf_counter()
                yield self._row(case, component, compare(saved / FOLDERS[component]), start)
                if not component:
                    yield from self._engines(case, context, saved / FOLDERS[component])
            for kind in PROCESSORS:
                if (saved / kind).is_dir():
                    start = time.perf_counter()
                    yield self._row(case, kind, compare_processor(kind, saved / kind), start)
            return
        yield from self._processors(case, options)
        classes = tokenizer_classes(case.model_type)
        if not classes:
            yield Result(case.model_type, self.name, Status.SKIPPED,
                         message="no tokenizer class in this release's tokenizer mapping")
            return
        for component, class_name in classes.items():
            start = time.perf_counter()
            with _folder(options.weights_save, case.model_type, FOLDERS[component]) as folder:
                outcome = save(class_name, folder, case.model_type)
                if not (folder / RECORD).is_file():
                    _unsaved(folder, class_name, outcome)
                yield self._row(case, component, outcome, start)
                if not component:
                    yield from self._engines(case, context, folder)

    def _processors(self, case: ModelCase, options: Options) -> Iterator[Result]:
        """The type's processors (image processor, feature extractor): made with their defaults,
        saved, and loaded back by this release."""
        from auditor.models import processing

        for kind, class_name in processing.processor_classes(case.model_type).items():
            start = time.perf_counter()
            with _folder(options.weights_save, case.model_type, kind) as folder:
                saved = save_processor(kind, class_name, folder)
                if saved is not None:
                    _unsaved(folder, class_name, saved, processing.INFO)
                yield self._row(case, kind, saved if saved is not None else compare_processor(kind, folder), start)

    def _row(self, case: ModelCase, component: str, outcome, start: float) -> Result:
        seconds = time.perf_counter() - start
        if isinstance(outcome, Failure):
            return Result.failed(case.model_type, self.name, outcome, component=component, seconds=seconds)
        status, message, extras = outcome
        return Result(case.model_type, self.name, status, component=component, message=message,
                      signature="" if status.ok or status is Status.SKIPPED else signature_of(message),
                      seconds=seconds, extras=extras)

    def _checkpoint(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        """A user's tokenizer: its own files and chat template, loaded with AutoTokenizer and
        recorded. Alone (or saving, on upgrade-check's base side): saved by this release and
        loaded back (does it read what it writes); with --weights-from: the same files loaded by
        this release, compared with the record the other release made of them."""
        start = time.perf_counter()
        options = context.options
        source = Path(case.checkpoint)
        name = Path(CHECKPOINTS, *case.model_type.split("/"))
        if options.weights_from:
            yield self._row(case, "", compare(Path(options.weights_from) / name / FOLDERS[""], source), start)
        else:
            with _folder(options.weights_save, str(name), FOLDERS[""]) as folder:
                yield self._row(case, "", save_existing(source, folder), start)
        yield from self._engines(case, context, source)

    def _engines(self, case: ModelCase, context: CaseContext, files: Path) -> Iterator[Result]:
        """Each installed engine's own tokenizer on `files`, against transformers' AutoTokenizer
        on the same files here: rows `tokenizer/<engine>`. A made tokenizer's folder gets the
        type's config.json beside it, as a served model's folder has (an engine picks by model type)."""
        from auditor.engines.tokenizing import engine_tokenizes, staged, tokenizing_engines

        engines = tokenizing_engines()
        record = files / RECORD
        unsaved = record.is_file() and "unsaved" in json.loads(record.read_text(encoding="utf-8"))
        with staged(files, None if case.checkpoint else _config(context)) as folder:
            for engine in engines:
                start = time.perf_counter()
                outcome = ((Status.SKIPPED, "no tokenizer saved to load (transformers' row says why)", {})
                           if unsaved else engine_tokenizes(engine, folder))
                row = self._row(case, engine.name, outcome, start)
                yield dataclasses.replace(row, extras={**row.extras, "engine_version": engine.version})


def _config(context: CaseContext):
    """The type's default config, or None where it cannot be made (the engine rows then load the
    folder as it is)."""
    try:
        return context.config()
    except Exception:
        return None


@contextlib.contextmanager
def _folder(save_root: str, model_type: str, name: str):
    if save_root:
        folder = Path(save_root) / model_type / name
        folder.mkdir(parents=True, exist_ok=True)
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix="auditor-tokenizer-") as tmp:
        yield Path(tmp)


def save(class_name: str, folder: Path, model_type: str):
    """Tokenizer class `class_name` on its tiny vocabulary, saved into `folder` with the records
    of the corpus; the outcome of its round trip in this release, or of what stopped it (the class
    missing, a file no tiny vocabulary is made in, what making it raised)."""
    import transformers

    from auditor.models.tokenization import NotATokenizer, made_tokenizer
    from auditor.models.vocabularies import VocabularyError

    cls = getattr(transformers, class_name, None)
    if cls is None:
        return Status.SKIPPED, f"{class_name} is in the tokenizer mapping but not importable here", {}
    try:
        with tempfile.TemporaryDirectory(prefix="auditor-vocab-") as tmp, quiet_transformers():
            tokenizer = made_tokenizer(cls, Path(tmp))
    except VocabularyError as exc:
        return Status.SKIPPED, f"no tiny vocabulary: {exc}", {"class": class_name}
    except NotATokenizer as exc:
        return Failure(Status.LOAD_ERROR, str(exc), signature_of(str(exc)), extras={"class": class_name})
    except Exception as exc:
        return _load_failure(exc, folder, f"{class_name} on its tiny vocabulary: ", {"class": class_name})
    return _write(tokenizer, folder, {"model_type": model_type, "class": class_name})


def _unsaved(folder: Path, class_name: str, outcome, name: str = RECORD) -> None:
    """Where nothing could be saved, why: the loading side's row then says the same (a missing
    package there is not a change here), instead of 'nothing saved'."""
    import transformers

    if isinstance(outcome, Failure):
        why = {"status": outcome.status.value, "message": outcome.message, "signature": outcome.signature,
               "fault": outcome.fault.value}
    else:
        status, message, _ = outcome
        why = {"status": status.value, "message": message, "signature": signature_of(message), "fault": ""}
    info = {"class": class_name, "transformers": transformers.__version__, "unsaved": why}
    (folder / name).write_text(json.dumps(info, ensure_ascii=False, indent=1), encoding="utf-8")


def _not_compared(info: dict):
    """The saving release's own verdict, where it could save nothing to compare."""
    why = info["unsaved"]
    message = f"nothing to compare: under transformers {info['transformers']}, {why['message']}"
    extras = {"class": info["class"], "saved_by": info["transformers"]}
    if Status(why["status"]) is Status.SKIPPED:
        return Status.SKIPPED, message, extras
    fault = Fault(why["fault"]) if why["fault"] else None
    return Failure(Status(why["status"]), message, why["signature"], fault, extras)


def save_existing(source: Path, folder: Path):
    """A user's tokenizer in `source` loaded with AutoTokenizer and recorded into `folder` (with
    this release's save of it); the outcome of its round trip in this release."""
    from transformers import AutoTokenizer

    try:
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
    except Exception as exc:
        return _load_failure(exc, source, f"AutoTokenizer on {source}: ", {})
    return _write(tokenizer, folder, {"model_type": source.name, "class": type(tokenizer).__name__,
                                      "source": str(source)}, loads_from=source)


def _write(tokenizer, folder: Path, info: dict, loads_from: Path | None = None):
    """Save `tokenizer` into `folder` with three records: of the instance, and of what this
    release's AutoTokenizer and the class by name load from the save (or from `loads_from`, a
    user's own files): another release compares its loads with the last two. Returns the round
    trip's outcome: the class by name, loaded from the save, against the instance."""
    import transformers

    from auditor.models.tokenization import observe

    extras = {"class": info["class"]}
    try:
        record = observe(tokenizer)
        with quiet_transformers():
            tokenizer.save_pretrained(str(folder))
    except Exception as exc:
        return _load_failure(exc, folder, f"{info['class']}.save_pretrained: ", extras)
    loaded = {how: _loaded(how, info["class"], loads_from or folder) for how in LOADS}
    info = {**info, "transformers": transformers.__version__, "record": record,
            **{how: observe(found) if not isinstance(found, BaseException) else {"error": repr(found)[:300]}
               for how, found in loaded.items()}}
    (folder / RECORD).write_text(json.dumps(info, ensure_ascii=False, indent=1), encoding="utf-8")
    named = loaded["named"]
    if isinstance(named, BaseException):
        return _load_failure(named, folder, f"{info['class']}.from_pretrained on its own save: ", extras)
    return verdict(record, info["named"], f"{info['class']} saved and loaded again by this release",
                    {**extras, "saved_by": info["transformers"]})


LOADS = ("auto", "named")  # AutoTokenizer, and the saved class by name


def _loaded(how: str, class_name: str, folder: Path):
    """The tokenizer `how` loads from `folder` here, or the exception it raised."""
    import transformers
    from transformers import AutoTokenizer

    try:
        with quiet_transformers():
            if how == "auto":
                return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            return getattr(transformers, class_name).from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:
        return exc


def compare(folder: Path, source: Path | None = None):
    """What another release saved in `folder` (or the user's files in `source`, which that
    release recorded there) loaded here with AutoTokenizer and with the class by name, each
    compared with what the saving release's same load gave: a (status, message, extras) outcome
    or a Failure."""
    import transformers

    path = folder / RECORD
    if not path.is_file():
        return Status.SKIPPED, f"no tokenizer saved in {folder}", {}
    info = json.loads(path.read_text(encoding="utf-8"))
    if "unsaved" in info:
        return _not_compared(info)
    saved_class, files = info["class"], source or folder
    extras = {"class": saved_class, "saved_by": info["transformers"]}
    auto = _loaded("auto", saved_class, files)
    if isinstance(auto, BaseException):
        if not hasattr(transformers, saved_class):
            failure = _load_failure(auto, files, f"{saved_class} is not in this release, and AutoTokenizer "
                                                 "fails on its save: ", extras)
            if failure.status is Status.LOAD_ERROR:
                return dataclasses.replace(failure, status=Status.CLASS_REMOVED)
            return failure
        return _load_failure(auto, files, f"AutoTokenizer on what {saved_class} saved: ", extras)
    found = _compared(info, "auto", auto, "AutoTokenizer", extras)
    if not hasattr(transformers, saved_class):
        if found[0] is Status.SAME:
            return (Status.CLASS_REMOVED, f"{saved_class} is not in this release (AutoTokenizer loads its save as "
                                          f"{type(auto).__name__}, with the same ids)", found[2])
        return found
    if found[0] is not Status.SAME:
        return found
    named = _loaded("named", saved_class, files)
    if isinstance(named, BaseException):
        return _load_failure(named, files, f"{saved_class}.from_pretrained (AutoTokenizer loads it): ", extras)
    return _compared(info, "named", named, f"{saved_class}.from_pretrained", extras)


def _compared(info: dict, how: str, tokenizer, said: str, extras: dict):
    """`tokenizer` (loaded here `how`) against the saving release's record of the same load (of
    the instance it saved, where that load raised there)."""
    from auditor.models.tokenization import observe

    before = info.get(how) if "texts" in info.get(how, {}) else info["record"]
    return verdict(before, observe(tokenizer), f"{said} on {info['class']} saved by transformers "
                                                f"{info['transformers']}",
                    {**extras, "loaded_as": type(tokenizer).__name__})


def save_processor(kind: str, class_name: str, folder: Path):
    """Processor class `class_name` made with its defaults and saved into `folder` with its
    outputs on the seeded input; None when saved, else the outcome that stops it."""
    import transformers

    from auditor.models import processing

    try:
        with quiet_transformers():
            processor = processing.processor_class(kind, class_name)()
            processing.save(kind, processor, folder, {"class": class_name, "transformers": transformers.__version__})
    except Exception as exc:
        return _load_failure(exc, folder, f"{class_name} with its defaults: ", {"class": class_name})
    return None


def compare_processor(kind: str, folder: Path):
    """What another release (or this one) saved in `folder`, loaded here with the auto class."""
    from auditor.models import processing

    if not (folder / processing.INFO).is_file():
        return Status.SKIPPED, f"no {kind} saved in {folder} (the saving run's row says why)", {}
    info = json.loads((folder / processing.INFO).read_text(encoding="utf-8"))
    if "unsaved" in info:
        return _not_compared(info)
    try:
        with quiet_transformers():
            same, message, extras = processing.load_and_compare(kind, folder)
    except Exception as exc:
        return _load_failure(exc, folder, f"the {kind} saved in {folder.parent.name}: ", {})
    return (Status.SAME if same else Status.DIFFERENT_OUTPUTS), message, extras


def _load_failure(exc: BaseException, folder: Path, prefix: str, extras: dict) -> Failure:
    """What a load (or making the tokenizer) raised: needs-package where the folder's files need
    a package this machine lacks; the classifier's verdict where it knows better (the auditor's
    own bug, another missing package); else load-error, with where it was raised."""
    missing = _missing_package(folder)
    failure = classify(exc, Phase.BUILD)
    at = failure.extras.get("raised_at", "")
    where = f" [raised at {at}]" if at else ""
    if missing:
        message = (f"needs {missing}: the saved files need it and it is not installed here (transformers "
                   f"said: {failure.message}){where}")
        return Failure(Status.NEEDS_PACKAGE, message, signature_of(f"needs {missing}"),
                       extras={**failure.extras, **extras, "package": missing})
    if failure.environmental or failure.status is Status.AUDITOR_ERROR:
        return dataclasses.replace(failure, extras={**failure.extras, **extras})
    return Failure(Status.LOAD_ERROR, f"{prefix}{failure.message}{where}", signature_of(failure.message),
                   failure.fault, {**failure.extras, **extras})


def _missing_package(folder: Path) -> str:
    """The package the files in `folder` need that is not importable here ("" when none)."""
    names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    for package, module, suffixes in PACKAGES:
        if any(name.endswith(suffixes) for name in names) and not _importable(module):
            return package
    return ""


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
