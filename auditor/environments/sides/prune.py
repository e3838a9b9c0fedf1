"""`python prune.py ROOT...` inside a side venv: the distributions no ROOT needs, one a line.

A side venv is reused across transformers releases (a bisect step, the next release of `versions`,
upgrade-check's other side), and pip and uv only ever add: what one release pulled in stays when
the venv switches to another. That is not harmless: transformers 5.25.0 needs `kernels`, and
transformers 5.0.0 uses `kernels` when it is importable, with an API it no longer has; every build
under 5.0.0 then failed ("Either a revision or a version must be specified"), an artifact of the
venv recorded as the release's. After each install the venv is cut back to the closure of its
roots' requirements (markers and extras evaluated here), so a release is measured as a fresh
install of it would be.

Run by the sessions' `install` (noxfile.py) with the venv's own interpreter, which uninstalls
what it prints with the venv's installer; only the standard library and `packaging` (a dependency
of transformers).
"""

from __future__ import annotations

import importlib.metadata as metadata
import sys

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

KEEP = {"pip", "setuptools", "wheel", "uv", "packaging"}


def closure(roots: list[str]) -> set[str]:
    """The installed distributions `roots` (requirement strings, extras honoured) need."""
    needed: set[str] = set()
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [Requirement(root) for root in roots]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        key = (name, tuple(sorted(requirement.extras)))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        needed.add(name)
        for text in dist.requires or ():
            try:
                child = Requirement(text)
            except InvalidRequirement:
                continue
            extras = ("", *requirement.extras)
            if child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in extras):
                todo.append(child)
    return needed


def unneeded(roots: list[str]) -> list[str]:
    installed = {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions() if d.metadata["Name"]}
    return sorted(installed - closure(roots) - KEEP)


def main(roots: list[str]) -> int:
    print("\n".join(unneeded(roots)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
