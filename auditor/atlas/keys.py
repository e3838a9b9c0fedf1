"""What makes two runs the same cell of the atlas's grid: RunKey.

A run is keyed by its environment (transformers, torch, Python minor, the engine releases
installed beside it: `vllm==0.34.0`; () where only the emulations ran) and by what it was asked
(its checks, and the model types it selected). A planned sweep's key is computed before it runs,
from the request; an added run's from its header; the two spell it alike, so that a run already in
the atlas is never swept again, whoever made it.

The atlas selects model types so that every release accepts them (plan.py, with
environments.steps.allowing_absent): each name its own --models, and the sweep's --allow-absent,
so that a type a release does not have yet (ergo before 5.25.0) is absent from
its run instead of refusing the sweep. Runs made before that option selected with `--models .*
--exclude '(?!(?:a|b)$).*'`; `canonical` reads that form back as the same selection.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from auditor.core.results import RunInfo
from auditor.core.runinfo import public_version
from auditor.sweeping.options import BY_NAME

_TOLERANT = re.compile(r"\(\?!\(\?:(?P<names>.+)\)\$\)\.\*")
ALL = ".*"


@dataclass(frozen=True)
class RunKey:
    transformers: str
    torch: str  # its public version (2.13.0, not 2.13.0+cpu); "" where an engine pins it
    python: str  # minor: 3.11
    engines: tuple[str, ...]  # installed engine releases, `vllm==0.34.0`, sorted
    checks: tuple[str, ...]  # sorted
    selection: tuple[str, ...]  # model types (or patterns) asked for, sorted; `!PATTERN` excludes; () every type

    @property
    def text(self) -> str:
        return (f"transformers {self.transformers}; torch {self.torch or '(the engine pin)'}; python {self.python}; "
                f"engines {', '.join(self.engines) or 'emulated'}; checks {','.join(self.checks)}; "
                f"models {','.join(self.selection) or 'all'}")

    @property
    def id(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:10]

    @property
    def lineage(self) -> str:
        """The key without its transformers and selection: the runs one history is read along."""
        return (f"torch {self.torch or '(the engine pin)'}; python {self.python}; "
                f"engines {', '.join(self.engines) or 'emulated'}; checks {','.join(self.checks)}")

    @property
    def slug(self) -> str:
        """Its run folder's name: `5.25.0-vllm-0.34.0-1a2b3c4d5e`."""
        parts = [self.transformers, *(e.replace("==", "-") for e in self.engines), self.id]
        return re.sub(r"[^A-Za-z0-9._+-]+", "_", "-".join(parts))


def public(version: str) -> str:
    """`2.13.0+cpu` -> `2.13.0` (a local build tag says nothing a key compares)."""
    return public_version(version)


def minor(python: str) -> str:
    return ".".join(python.split(".")[:2])


def canonical(models: Sequence[str], exclude: Sequence[str] = ()) -> tuple[str, ...]:
    """The selection as a key holds it: the tolerant form read back, sorted, excludes marked."""
    models, exclude = list(models), list(exclude)
    if models == [ALL] and len(exclude) == 1 and (found := _TOLERANT.fullmatch(exclude[0])):
        models, exclude = found.group("names").split("|"), []
    elif models == [ALL]:
        models = []
    return tuple(sorted(set(models))) + tuple(sorted({f"!{e}" for e in exclude}))


def key_of(info: RunInfo) -> RunKey:
    """The key of a run, from its header."""
    selection = info.selection or ()
    pairs = list(zip(selection[::2], selection[1::2], strict=False))
    models = [value for flag, value in pairs if flag == BY_NAME["models"].flag]
    exclude = [value for flag, value in pairs if flag == BY_NAME["exclude"].flag]
    return RunKey(info.transformers, public(info.torch), minor(info.python),
                  tuple(sorted(f"{name}=={version}" for name, version in info.installed_engines.items())),
                  tuple(sorted(info.checks)), canonical(models, exclude))
