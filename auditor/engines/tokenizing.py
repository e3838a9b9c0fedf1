"""An engine's own tokenizer against transformers' on the same files: the tokenizer check's
`tokenizer/<engine>` rows, for every engine whose `Engine.tokenizes` answers (vllm/tokenizing.py,
sglang/tokenizing.py name each engine's own loading function).

Both load the same folder in the same process: transformers' AutoTokenizer, and the engine's own
way (which may pick another class, wrap it, or fix it after loading); both run the tokenizer
check's corpus (auditor.models.tokenization). A difference is the engine's, named with where the
engine made what it serves; what its loading raised is judged by the one rule.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from auditor.core.classifier import Phase, classify
from auditor.core.fault import Fault
from auditor.core.messages import signature_of
from auditor.core.status import Failure, Status
from auditor.models.logs import quiet_transformers


def tokenizing_engines() -> tuple:
    """The installed engines whose own tokenizer loading answers (`Engine.tokenizes`)."""
    from auditor import engines

    return tuple(engine for engine in engines.all() if engine.tokenizes is not None and engine.installed)


def engine_tokenizes(engine, files: Path):
    """`engine`'s own tokenizer on `files` against transformers' AutoTokenizer on them: a row's
    outcome (a status tuple or a Failure)."""
    from transformers import AutoTokenizer

    from auditor.models.tokenization import observe, verdict

    if not files.is_dir():
        return Status.SKIPPED, f"no tokenizer files in {files}", {}
    try:
        with quiet_transformers():
            auto = AutoTokenizer.from_pretrained(str(files), local_files_only=True)
    except Exception as exc:
        return Status.SKIPPED, f"transformers' AutoTokenizer cannot load these files to compare with ({exc!r:.200})", {}
    try:
        with quiet_transformers():
            served, loader = engine.tokenizes(files)
    except Exception as exc:
        return classify(exc, Phase.ENGINE, engine_package=engine.package)
    cls = type(served)
    # Where the engine made what it serves: its tokenizer class where the engine defines one (vLLM's
    # cached wrapper), else its loading function (SGLang's get_tokenizer and its post-load fixes).
    where = _defined_at(cls, engine.package) or _defined_at(loader, engine.package) or cls.__module__
    found = verdict(observe(auto), observe(served), f"{engine.title}'s tokenizer ({cls.__name__}) against "
                                                    f"transformers' AutoTokenizer ({type(auto).__name__})",
                    {"engine_class": cls.__name__, "engine_class_at": where})
    if found[0] is Status.SAME:
        return found
    status, message, extras = found
    return Failure(status, f"{message} [the engine's tokenizer: {where}]", signature_of(message), Fault.ENGINE, extras)


@contextlib.contextmanager
def staged(files: Path, config=None):
    """`files` as they are (a user's model folder), or a copy with `config` written beside them as
    config.json (a made tokenizer's folder: an engine picks by the model type a served folder names)."""
    if config is None or not files.is_dir():
        yield files
        return
    import shutil

    with tempfile.TemporaryDirectory(prefix="auditor-tokenizer-") as tmp:
        copy = Path(tmp) / "model"
        shutil.copytree(files, copy)
        config.to_json_file(str(copy / "config.json"))
        yield copy


def _defined_at(thing, package: str) -> str:
    """`package/file.py:LINE` where `thing` is defined, if that is inside `package`; else ""."""
    import inspect

    try:
        where = f"{inspect.getsourcefile(thing)}:{inspect.getsourcelines(thing)[1]}"
    except (TypeError, OSError, ValueError):
        return ""
    marker = f"/{package}/"
    return where[where.rindex(marker) + 1:] if marker in where else ""
