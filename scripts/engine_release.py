"""`python scripts/engine_release.py ENGINE`: the release of ENGINE this project tests its own code
with, and that release's tested transformers: "0.34.0 5.18.0". Read from the engine's release
records (the newest record), so that a new release is one record: CI and scripts/install_vllm.sh
ask here. `engine_release.py ENGINE --torch`: the torch that release pins ("==2.14.1"), which CI
installs once for both engine venvs (scripts/link_shared.py). Needs only `packaging` beside the
checkout (a fresh venv has no auditor installed)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import auditor.engines as engines  # noqa: E402
from auditor.engines.interface import pick_release  # noqa: E402


def main(name: str, torch: bool = False) -> str:
    release = pick_release(engines.get(name).releases, None)
    if torch:
        return release.torch
    return f"{release.version} {release.tested_transformers}".strip()


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[2:] not in ([], ["--torch"]):
        sys.exit("usage: engine_release.py ENGINE [--torch]")
    print(main(sys.argv[1], torch=sys.argv[2:] == ["--torch"]))
