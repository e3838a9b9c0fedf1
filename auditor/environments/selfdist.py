"""Which auditor the side environments install, and where they live: the one running the command.

From a checkout (the package sits next to the project's pyproject.toml), the sides install it
editable, as they always have, and live in its `.nox/`. From an installed distribution (a wheel,
or the package index's), they install a wheel rebuilt from the installed files themselves: the
RECORD that pip wrote lists every file of the distribution, so zipping them back with their
dist-info is that exact auditor, needs no build backend, no network and no wheel kept around,
and works however it was installed (a local wheel, the index, a wheel since deleted). Those
venvs live in the user's cache: $AUDITOR_VENVS, else $XDG_CACHE_HOME/model-sweep-auditor/venvs.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "model-sweep-auditor"
VENVS_ENV = "AUDITOR_VENVS"  # where the side venvs live (default: see venv_home)
# Files pip writes at install time that are not part of the distribution.
_INSTALL_ONLY = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


@dataclass(frozen=True)
class ThisAuditor:
    """What a side installs to run this auditor: `requirement` as pip takes it ("-e DIR" or a
    wheel), and a fingerprint that changes whenever that install would (the venvs' stamp)."""

    requirement: tuple[str, ...]
    fingerprint: str
    checkout: Path | None  # the checkout it runs from, None for an installed distribution


def checkout_root() -> Path | None:
    """The checkout this package runs from, or None when it is an installed distribution."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and f'name = "{DISTRIBUTION}"' in pyproject.read_text(encoding="utf-8"):
        return root
    return None


def venv_home() -> Path:
    """Where the side venvs live: $AUDITOR_VENVS, a checkout's .nox/, or the user's cache."""
    if os.environ.get(VENVS_ENV):
        return Path(os.environ[VENVS_ENV]).expanduser().resolve()
    root = checkout_root()
    if root is not None:
        return root / ".nox"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "model-sweep-auditor" / "venvs"


def this_auditor(extras: str = "") -> ThisAuditor:
    """This auditor as the sides install it (`extras`: "[ray]" or "")."""
    root = checkout_root()
    if root is not None:
        digest = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
        return ThisAuditor(("-e", f"{root}{extras}"), f"editable {root} {digest}", root)
    wheel = installed_wheel(venv_home() / "self")
    return ThisAuditor((f"{DISTRIBUTION}{extras} @ {wheel.as_uri()}",), f"wheel {wheel.name} {wheel.parent.name}",
                       None)


def installed_wheel(directory: Path) -> Path:
    """A wheel of the installed distribution, rebuilt from the files its RECORD lists, under
    `directory`/FINGERPRINT/ (made once per distinct install)."""
    dist = metadata.distribution(DISTRIBUTION)
    record = dist.read_text("RECORD") or ""
    fingerprint = hashlib.sha256(record.encode()).hexdigest()[:16]
    name = dist.metadata["Name"].replace("-", "_")
    version = dist.version
    target = directory / fingerprint / f"{name}-{version}-py3-none-any.whl"
    if target.is_file():
        return target
    files = [f for f in dist.files or () if _belongs(f)]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    rows = []
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            data = Path(str(file.locate())).read_bytes()
            archive.writestr(str(file), data)
            rows.append(f"{file},sha256={_digest(data)},{len(data)}")
        info = f"{name}-{version}.dist-info"
        rows.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    partial.replace(target)
    return target


def _belongs(file: metadata.PackagePath) -> bool:
    """A file of the distribution itself: not the scripts pip generated outside site-packages,
    not bytecode it compiled, not its own install records."""
    parts = file.parts
    if not parts or parts[0] == ".." or "__pycache__" in parts or file.name.endswith(".pyc"):
        return False
    return not (parts[0].endswith(".dist-info") and file.name in _INSTALL_ONLY)


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
