"""Hardlink the distributions of a shared folder into this Python's site-packages, before an engine
is installed there: pip then sees them installed, and two engine venvs that pin the same CUDA stack
hold one copy of it on disk (torch's nvidia-* libraries and triton: about 5 GB a venv).

    python scripts/link_shared.py SHARED     (SHARED: a folder made by `pip install --target SHARED`)

Each distribution's files are those its RECORD lists; one the venv already has (its own pip and
setuptools) is left as the venv has it, and console scripts (outside the folder) are not linked.
Safe for both venvs: pip removes a file before it writes one, so a package upgraded or removed in
one venv leaves the other's untouched, and what an engine pins otherwise is installed over it as
usual. Used by CI (.ci/run), where two engine venvs are made side by side; the install scripts run
it when AUDITOR_SHARED_SITE names such a folder. Standard library only (a fresh venv has nothing).
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from importlib.metadata import PathDistribution, distributions
from pathlib import Path


def _name(dist: PathDistribution) -> str:
    return re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()


def link(shared: Path, site: Path) -> tuple[int, int]:
    """(distributions linked, files linked) from `shared` into `site`."""
    have = {_name(d) for d in distributions(path=[str(site)])}
    dists = files = 0
    for info in sorted(shared.glob("*.dist-info")):
        dist = PathDistribution(info)
        if _name(dist) in have:
            continue
        for entry in dist.files or ():
            source = shared / entry
            if ".." in entry.parts or not source.is_file():
                continue
            target = site / entry
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(source, target)
            files += 1
        dists += 1
    return dists, files


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: link_shared.py SHARED", file=sys.stderr)
        return 2
    shared = Path(argv[0])
    if not shared.is_dir():
        print(f"link_shared: {shared} is not a folder; nothing shared", file=sys.stderr)
        return 0
    dists, files = link(shared, Path(sysconfig.get_path("purelib")))
    print(f"link_shared: {dists} distributions ({files} files) linked from {shared}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
