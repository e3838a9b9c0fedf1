"""The nox steps that make and sweep one other environment: what transformers it installs, which
side of a comparison it is, and its two steps (install, then sweep) as command lines.

Every venv of the auditor (upgrade-check's two sides, a release of `versions`, `bisect` and the
atlas, an engine of `sweep --engine`) is the packaged session `upgrade_check(base)` or
`upgrade_check(new)` (sides/noxfile.py) run under some `--envdir`; AUDITOR_TRANSFORMERS tells it
which transformers to install. A venv is installed in one step and swept in another, so that a
release pip cannot install is told apart from a failed sweep. Nothing here runs anything:
runner.py runs the steps.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditor.sweeping.sides import SideSweep

SESSION = "upgrade_check"
TRANSFORMERS_ENV = "AUDITOR_TRANSFORMERS"
EXTRAS_ENV = "AUDITOR_EXTRAS"  # the project's extras in the venv, "[ray]" for --executor ray
_ARCHIVES = (".whl", ".tar.gz", ".zip")


class TransformersSpecError(ValueError):
    """A --from/--to that is neither a release nor an existing wheel, sdist or source tree."""


@dataclass(frozen=True)
class Transformers:
    """One side's transformers: a release from the package index, or a local wheel, sdist or checkout."""

    given: str  # as typed
    requirement: str  # what pip installs: "transformers==5.18.0" or an absolute path
    version: str  # the release it should report, "" for a source tree
    slug: str  # its part of directory names and labels

    @property
    def is_path(self) -> bool:
        return not self.requirement.startswith("transformers==")


@dataclass(frozen=True)
class Side:
    name: str  # "base" or "new"
    transformers: Transformers
    outdir: Path  # the side's run directory
    engines: tuple[str, ...] = ()  # the engines installed with it, "vllm 0.33.0"

    @property
    def session(self) -> str:
        return f"{SESSION}({self.name})"

    @property
    def label(self) -> str:
        """The environment label of the side's results: the column group in merged reports."""
        return ", ".join([f"{self.name}: transformers {self.transformers.slug}", *self.engines])


@dataclass(frozen=True)
class Step:
    """One nox invocation: installing or sweeping one side."""

    side: Side
    action: str  # "install" or "sweep"
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # added to the caller's environment

    def describe(self) -> str:
        """`install new (5.18.0)`, `sweep vllm-0.34.0 (5.25.0)`; `install transformers 5.24.0`
        where the side is named after its release."""
        given = self.side.transformers.given
        if self.side.name in (given, self.side.transformers.slug):
            return f"{self.action} transformers {given}"
        return f"{self.action} {self.side.name} ({given})"

    def shell(self) -> str:
        """The step as a command line one could paste."""
        return shlex.join([*(f"{k}={v}" for k, v in self.env.items()), *self.argv])


def parse_transformers(text: str, cwd: Path) -> Transformers:
    """A release such as `5.18.0`, or a path (relative to `cwd`) to a wheel, sdist or source tree.

    A string that parses as a version is a release; write `./5.18.0` for a directory of that name.
    """
    from packaging.version import InvalidVersion, Version

    text = text.strip()
    try:
        version = str(Version(text))
    except InvalidVersion:
        return _local_transformers(text, cwd)
    return Transformers(given=text, requirement=f"transformers=={version}", version=version, slug=version)


def _local_transformers(text: str, cwd: Path) -> Transformers:
    path = cwd / Path(text).expanduser()
    if text and path.is_dir():
        if not ((path / "pyproject.toml").is_file() or (path / "setup.py").is_file()):
            raise TransformersSpecError(f"{text!r} is a directory without pyproject.toml or setup.py, "
                                   "not a transformers source tree")
        path = path.resolve()
        return Transformers(given=text, requirement=str(path), version="", slug=_slug(path.name))
    if text and path.is_file():
        if not path.name.endswith(_ARCHIVES):
            raise TransformersSpecError(f"{text!r} is not a wheel or sdist ({', '.join(_ARCHIVES)})")
        version = archive_version(path.name)
        return Transformers(given=text, requirement=str(path.resolve()), version=version,
                            slug=_slug(version or _strip_archive(path.name)))
    raise TransformersSpecError(f"{text!r} is neither a transformers version (such as 5.18.0) "
                           "nor an existing wheel, sdist or source directory")


def archive_version(filename: str) -> str:
    """The version in `transformers-5.18.0.dev0-py3-none-any.whl` or `transformers-5.18.0.tar.gz`, else ""."""
    from packaging.version import InvalidVersion, Version

    stem = _strip_archive(filename)
    parts = stem.split("-") if filename.endswith(".whl") else stem.rsplit("-", 1)
    if len(parts) < 2:
        return ""
    try:
        return str(Version(parts[1]))
    except InvalidVersion:
        return ""


def _strip_archive(filename: str) -> str:
    for suffix in _ARCHIVES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return filename


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_") or "local"


def allowing_absent(sweep: SideSweep) -> SideSweep:
    """`sweep` as the sides of releases that differ in their types run it: a type --models names
    may be absent from one side's release (--allow-absent), and a type only the newer has is a
    new type of the diff, not a refusal."""
    return dataclasses.replace(sweep, allow_absent=bool(sweep.models))


def installed_mismatch(side: Side, installed: str) -> str | None:
    """Why the transformers a side's results report is not the one asked for, or None when it is."""
    from packaging.version import InvalidVersion, Version

    wanted = side.transformers.version
    if not wanted:
        return None
    try:
        if Version(installed) == Version(wanted):
            return None
    except InvalidVersion:
        pass
    return f"the {side.name} side ran transformers {installed}, not {wanted}"


def session_steps(side: Side, *, session: str, noxfile: Path, nox: Sequence[str], label: str,
                  envdir: Path | None = None, sweep: SideSweep | None = None,
                  env: Mapping[str, str] | None = None, extras: str = "") -> tuple[Step, Step]:
    """Installing `side` with the nox `session` of `noxfile` (its venv under `envdir`, nox's
    default .nox/ next to the noxfile when None), and sweeping it with `sweep` into `side.outdir`
    under the environment label `label` (continuing what is there where `sweep.resume`, else
    replacing it: the command has checked the folder); `extras`: the project's extras in the
    venv ("[ray]"). Paths must be absolute: nox runs its sessions from the noxfile's directory."""
    if not (side.outdir.is_absolute() and noxfile.is_absolute() and (envdir is None or envdir.is_absolute())):
        raise ValueError("the steps of a venv need absolute paths")
    nox_cmd = (*nox, "--noxfile", str(noxfile), *(("--envdir", str(envdir)) if envdir else ()), "--session", session)
    env = {**(env or {}), TRANSFORMERS_ENV: side.transformers.requirement, **({EXTRAS_ENV: extras} if extras else {})}
    install = Step(side, "install", (*nox_cmd, "--install-only"), env)
    sweep = sweep or SideSweep()
    spelled = dataclasses.replace(sweep, output=side.outdir, label=label, overwrite=not sweep.resume).flags()
    run = Step(side, "sweep", (*nox_cmd, "--no-install", "--", *spelled), env)
    return install, run
