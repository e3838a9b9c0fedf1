"""What a run could not audit for want of a package: the `missing-dependency` rows, by package.

A newcomer's first sweep (the README's `pip install -e .`) leaves the types that need pillow, timm
or torchaudio `missing-dependency`; the sweep ends with one line naming them and the command that
installs what they need (`Missing.text`). The package is read off the row's message: transformers'
own `pip install X` hint, its "requires the X library", or Python's "No module named 'x'" (an
import name mapped to the name pip knows it by where the two differ).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.core.results import Result
from auditor.core.status import Status

_PIP_HINT = re.compile(r"`pip install ([A-Za-z0-9_.\-\[\]]+)`")
_REQUIRES = re.compile(r"requires the ([A-Za-z0-9_.\-]+) library")
_NO_MODULE = re.compile(r"No module named '([A-Za-z0-9_]+)")
# Import names whose package on the index is spelled otherwise.
_PACKAGE_OF = {"PIL": "pillow", "cv2": "opencv-python", "sklearn": "scikit-learn", "yaml": "pyyaml",
               "bs4": "beautifulsoup4", "Levenshtein": "python-Levenshtein"}
_SHOWN_TYPES = 6  # types named per package; the rest are counted


def package_of(message: str) -> str | None:
    """The package a missing-dependency message asks for, or None when it names none."""
    for pattern in (_PIP_HINT, _REQUIRES, _NO_MODULE):
        found = pattern.search(message)
        if found:
            name = found.group(1)
            return _PACKAGE_OF.get(name, name.lower() if pattern is _REQUIRES else name)
    return None


@dataclass(frozen=True)
class Missing:
    """The model types a run left `missing-dependency`, by the package each asked for ("" for a
    message that names none: an installed package that does not import, say)."""

    by_package: tuple[tuple[str, tuple[str, ...]], ...]  # (package, its model types), most types first

    @property
    def model_types(self) -> tuple[str, ...]:
        return tuple(sorted({t for _, types in self.by_package for t in types}))

    @property
    def packages(self) -> tuple[str, ...]:
        return tuple(package for package, _ in self.by_package if package)

    def text(self) -> str:
        """One line: how many types, each package with its types, and the commands that install
        them and sweep those types again."""
        parts = []
        for package, types in self.by_package:
            shown = ", ".join(types[:_SHOWN_TYPES]) + (f" +{len(types) - _SHOWN_TYPES}" if len(types) > _SHOWN_TYPES else "")
            parts.append(f"{package or 'an installed package that does not import'} ({shown})")
        count = len(self.model_types)
        line = (f"Not audited for want of a package: {count} model type{'s' if count != 1 else ''} "
                f"({'; '.join(parts)}).")
        if self.packages:
            line += (f" Install with `pip install {' '.join(shlex.quote(p) for p in self.packages)}`, then "
                     f"`auditor sweep --models {','.join(self.model_types)}` audits them.")
        return line


def missing(results: Iterable[Result]) -> Missing | None:
    """The run's missing-dependency types by package; None when it has none."""
    types: dict[str, set[str]] = {}
    for row in results:
        if row.status is Status.MISSING_DEPENDENCY:
            types.setdefault(package_of(row.message) or "", set()).add(row.model_type)
    if not types:
        return None
    ordered = sorted(types.items(), key=lambda kv: (not kv[0], -len(kv[1]), kv[0]))
    return Missing(tuple((package, tuple(sorted(names))) for package, names in ordered))
