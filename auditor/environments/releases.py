"""Which transformers releases a bisection or a version range covers, from the package index's list.

The list comes from `pip index versions transformers` (`index_releases`, the one place that asks;
the noxfile asks through it too). Only final releases count: pre-releases and dev builds are left
out, patch releases are kept (5.22.1 is a release a user can be on). Nothing else here touches
the network. This module needs only `packaging`: the noxfile imports it in nox's own interpreter.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


class ReleaseError(ValueError):
    """A release the index does not have, a range with nothing in it, or ends in the wrong order."""


@functools.cache
def index_releases(python_version: str = "") -> tuple[str, ...]:
    """Every final transformers release on the package index pip is configured with, oldest first;
    with `python_version` (3.11), those that install on that Python. A ReleaseError, with the end
    of pip's complaint, when the index lists none."""
    proc = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "transformers",
                           *(["--python-version", python_version] if python_version else [])],
                          capture_output=True, text=True, check=False)
    try:
        return tuple(parse_index_versions(proc.stdout))
    except ReleaseError as exc:
        raise ReleaseError(f"{exc}{(' ' + proc.stderr.strip()[-300:]) if proc.stderr.strip() else ''}") from None


def parse_index_versions(text: str) -> list[str]:
    """The releases in the output of `pip index versions PACKAGE` (its `Available versions:` line)."""
    match = re.search(r"^\s*Available versions:\s*(.+)$", text, flags=re.MULTILINE)
    if not match:
        raise ReleaseError("the package index listed no versions (`pip index versions` said: "
                           f"{text.strip()[:200] or 'nothing'})")
    return final_releases(v.strip() for v in match.group(1).split(","))


def final_releases(versions: Iterable[str]) -> list[str]:
    """Final releases only, oldest first, each once, as the index spells them."""
    found: dict[Version, str] = {}
    for text in versions:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not (version.is_prerelease or version.is_devrelease):
            found.setdefault(version, text)
    return [found[v] for v in sorted(found)]


def find_release(text: str, releases: Sequence[str]) -> str:
    """`text` as the index spells it (5.18 finds 5.18.0); a ReleaseError naming the nearest when absent."""
    try:
        wanted = Version(text.strip())
    except InvalidVersion:
        raise ReleaseError(f"{text!r} is not a version, such as 5.18.0") from None
    for release in releases:
        if Version(release) == wanted:
            return release
    raise ReleaseError(f"transformers {text} is not a release on the package index{_nearest(wanted, releases)}")


def _nearest(wanted: Version, releases: Sequence[str]) -> str:
    if not releases:
        return ""
    below = [r for r in releases if Version(r) < wanted][-1:]
    above = [r for r in releases if Version(r) > wanted][:1]
    return f"; nearest: {', '.join(below + above)}"


def releases_between(good: str, bad: str, releases: Sequence[str]) -> list[str]:
    """Every release from `good` to `bad`, both ends included, oldest first."""
    low, high = find_release(good, releases), find_release(bad, releases)
    if Version(low) >= Version(high):
        raise ReleaseError(f"--good {good} must be an older release than --bad {bad}")
    return [r for r in releases if Version(low) <= Version(r) <= Version(high)]


def resolve_releases(spec: str, releases: Sequence[str]) -> list[str]:
    """A comma-separated list of releases (`5.20.0,5.22.0`) or a specifier (`>=5.20,<5.25`), oldest first."""
    spec = spec.strip()
    if not spec:
        raise ReleaseError("no releases given: a list such as 5.20.0,5.22.0 or a specifier such as '>=5.20,<5.25'")
    if any(op in spec for op in "<>=!~"):
        try:
            specifier = SpecifierSet(spec)
        except InvalidSpecifier:
            raise ReleaseError(f"{spec!r} is neither a list of releases nor a version specifier") from None
        chosen = [r for r in releases if Version(r) in specifier]
        if not chosen:
            raise ReleaseError(f"no transformers release on the package index matches {spec!r}")
        return chosen
    chosen = {find_release(part, releases) for part in spec.split(",") if part.strip()}
    return sorted(chosen, key=Version)
