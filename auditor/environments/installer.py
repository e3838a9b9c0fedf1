"""pip or uv: what creates the side venvs and installs into them.

uv when it is there (the `uv` extra, or `uv` on PATH: nox finds it both ways), pip otherwise;
$AUDITOR_INSTALLER=pip|uv chooses. uv creates a venv in milliseconds and installs from a shared
cache, but it does not read pip's configuration: the indexes, find-links and constraints pip is
configured with are handed to uv through its own variables (unless those are set already), and
uv is told to pick the best version across all indexes as pip does, so that both install the
same releases from the same places, and to compile bytecode as it installs, as pip does, so that
both venvs start as fast.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

INSTALLER_ENV = "AUDITOR_INSTALLER"
CHOICES = ("uv", "pip")
# pip's option -> uv's variable and how uv separates several values.
_UV_SETTINGS = {
    "index-url": ("UV_DEFAULT_INDEX", " "),
    "extra-index-url": ("UV_INDEX", " "),
    "find-links": ("UV_FIND_LINKS", ","),
    "constraint": ("UV_CONSTRAINT", " "),
}


class InstallerError(ValueError):
    """$AUDITOR_INSTALLER names an installer that is not there."""


@dataclass(frozen=True)
class Installer:
    name: str  # "uv" or "pip"
    nox_backend: str  # nox's --default-venv-backend
    env: tuple[tuple[str, str], ...] = ()  # added to the steps' environment


def uv_available() -> bool:
    return shutil.which("uv") is not None or importlib.util.find_spec("uv") is not None


def choose_installer() -> Installer:
    """uv when available, else pip; $AUDITOR_INSTALLER decides when set."""
    wanted = os.environ.get(INSTALLER_ENV, "").strip().lower()
    if wanted and wanted not in CHOICES:
        raise InstallerError(f"${INSTALLER_ENV}={wanted!r}: valid: {', '.join(CHOICES)}")
    if wanted == "uv" and not uv_available():
        raise InstallerError(f"${INSTALLER_ENV}=uv, but uv is not installed (pip install uv)")
    if wanted == "pip" or (not wanted and not uv_available()):
        return Installer("pip", "virtualenv")
    return Installer("uv", "uv", tuple(sorted(uv_settings(pip_config()).items())))


@functools.cache
def pip_config() -> tuple[tuple[str, str], ...]:
    """pip's effective settings (`pip config list`: files and PIP_ variables), the last of each name."""
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                          check=False)
    return tuple(parse_pip_config(proc.stdout).items())


def parse_pip_config(text: str) -> dict[str, str]:
    """`global.extra-index-url='a b'` lines -> {"extra-index-url": "a b"}; later lines win, as in pip."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            found[key.rsplit(".", 1)[-1]] = value.strip().strip("'\"")
    return found


def uv_settings(config: tuple[tuple[str, str], ...] | dict[str, str]) -> dict[str, str]:
    """uv's variables for pip's settings, leaving alone any the user has set."""
    settings = {
        "UV_INDEX_STRATEGY": "unsafe-best-match",  # pip's rule: the best version of all indexes
        # pip compiles bytecode as it installs, uv does not: every process of a sweep (parent,
        # workers, receivers, Ray workers) would compile torch's and transformers' modules again
        # where bytecode is not written (PYTHONDONTWRITEBYTECODE, common in containers).
        "UV_COMPILE_BYTECODE": "1",
    }
    for key, value in dict(config).items():
        if key in _UV_SETTINGS:
            variable, separator = _UV_SETTINGS[key]
            settings[variable] = separator.join(value.split())
    return {k: v for k, v in settings.items() if k not in os.environ}
