"""Planning `auditor upgrade-check`: which nox sessions run, with what, and where their results go.

Each side of the comparison is the nox session `upgrade_check(base)` or `upgrade_check(new)`;
their virtual environments are reused from run to run, and AUDITOR_TRANSFORMERS tells each which
transformers to install. Both sides are installed before either sweeps, so a release pip cannot
find fails in a minute rather than after the first sweep. Nothing here runs anything:
check.py runs the steps.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditor.sweeping.options import side_flags

SESSION = "upgrade_check"
SIDES = ("base", "new")
TRANSFORMERS_ENV = "AUDITOR_TRANSFORMERS"
_ARCHIVES = (".whl", ".tar.gz", ".zip")


class UpgradeSpecError(ValueError):
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
class UpgradeSide:
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

    side: UpgradeSide
    action: str  # "install" or "sweep"
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # added to the caller's environment

    def describe(self) -> str:
        return f"{self.action} {self.side.name} ({self.side.transformers.given})"

    def shell(self) -> str:
        """The step as a command line one could paste."""
        return shlex.join([*(f"{k}={v}" for k, v in self.env.items()), *self.argv])


@dataclass(frozen=True)
class UpgradePlan:
    base: UpgradeSide
    new: UpgradeSide
    outdir: Path  # holds base/, new/, the merged report and the diff
    steps: tuple[Step, ...]

    @property
    def sides(self) -> tuple[UpgradeSide, UpgradeSide]:
        return self.base, self.new


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
            raise UpgradeSpecError(f"{text!r} is a directory without pyproject.toml or setup.py, "
                                   "not a transformers source tree")
        path = path.resolve()
        return Transformers(given=text, requirement=str(path), version="", slug=_slug(path.name))
    if text and path.is_file():
        if not path.name.endswith(_ARCHIVES):
            raise UpgradeSpecError(f"{text!r} is not a wheel or sdist ({', '.join(_ARCHIVES)})")
        version = archive_version(path.name)
        return Transformers(given=text, requirement=str(path.resolve()), version=version,
                            slug=_slug(version or _strip_archive(path.name)))
    raise UpgradeSpecError(f"{text!r} is neither a transformers version (such as 5.18.0) "
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


def default_outdir(base: Transformers, new: Transformers, reports: Path = Path("reports"),
                   base_engines: Sequence[str] = (), new_engines: Sequence[str] = ()) -> Path:
    """reports/upgrade-5.17.0-to-5.18.0; where the engines differ (`--to-engine`), each side's are
    in its part too: upgrade-5.18.0-vllm-0.33.0-to-5.18.0-vllm-0.34.0."""
    if tuple(base_engines) == tuple(new_engines):
        return reports / f"upgrade-{base.slug}-to-{new.slug}"
    parts = ["-".join([spec.slug, *(_slug(e.replace(" ", "-")) for e in engines)])
             for spec, engines in ((base, base_engines), (new, new_engines))]
    return reports / f"upgrade-{parts[0]}-to-{parts[1]}"


def sweep_flags(*, models: Sequence[str] = (), exclude: Sequence[str] = (), checks: str | None = None,
                policies: str | None = None, jobs: int | None = None, timeout: float | None = None,
                **more) -> list[str]:
    """The `auditor sweep` options both sides share, spelled by the sweep's own declarations; an
    option not given keeps the sweep's default. Named types may be absent from one side's
    release (--allow-absent): a type only the newer has is a new type of the diff, not a refusal."""
    return side_flags(models=models, exclude=exclude, checks=checks, policies=policies, jobs=jobs,
                      timeout=timeout, allow_absent=bool(models), **more)


def side_run_flags(outdir: Path, label: str, *, resume: bool) -> list[str]:
    """Where a side's sweep writes, its label, and whether it continues an earlier run."""
    return side_flags(output=outdir, label=label, resume=resume, overwrite=not resume)


def plan_upgrade(base: Transformers, new: Transformers, *, outdir: Path, noxfile: Path,
                 nox: Sequence[str], sweep: Sequence[str] = (), resume: bool = False, envdir: Path | None = None,
                 env: Mapping[str, str] | None = None, engines: Sequence[str] = (),
                 new_engines: Sequence[str] | None = None, new_env: Mapping[str, str] | None = None,
                 weights: bool = False) -> UpgradePlan:
    """Install both sides, then sweep each into `outdir`/base and `outdir`/new (paths must be absolute:
    nox runs its sessions from the noxfile's directory). `envdir`: where the venvs live (nox's
    default: .nox/ next to the noxfile); `env`: what else the sessions read; `engines`: the
    engines every side has, for its label ("vllm 0.33.0"); `new_engines`, `new_env`: the new
    side's, where an engine upgrade makes them differ (`--to-engine`). `weights`: the sweeps run the
    weights check: the base side saves its checkpoints in `outdir`/weights and the new side loads
    those (a checkpoint of the older release under the newer)."""
    new_engines = tuple(engines if new_engines is None else new_engines)
    if _same(base, new) and tuple(engines) == new_engines:
        raise UpgradeSpecError(f"--from and --to are both {new.requirement}: nothing to compare")
    if not outdir.is_absolute() or not noxfile.is_absolute() or not (envdir is None or envdir.is_absolute()):
        raise ValueError("plan_upgrade needs absolute paths")
    sides = [UpgradeSide(name, spec, outdir / name, side_engines)
             for name, spec, side_engines in zip(SIDES, (base, new), (tuple(engines), new_engines), strict=True)]
    envs = {"base": dict(env or {}), "new": dict((env if new_env is None else new_env) or {})}
    nox_cmd = (*nox, "--noxfile", str(noxfile), *(("--envdir", str(envdir)) if envdir else ()), "--session")
    steps = [Step(side, "install", (*nox_cmd, side.session, "--install-only"),
                  {**envs[side.name], TRANSFORMERS_ENV: side.transformers.requirement}) for side in sides]
    steps += [Step(side, "sweep",
                   (*nox_cmd, side.session, "--no-install", "--",
                    *side_run_flags(side.outdir, side.label, resume=resume), *sweep,
                    *(weights_flags(outdir / WEIGHTS, saves=side.name == SIDES[0]) if weights else ())),
                   {**envs[side.name], TRANSFORMERS_ENV: side.transformers.requirement}) for side in sides]
    return UpgradePlan(base=sides[0], new=sides[1], outdir=outdir, steps=tuple(steps))


WEIGHTS = "weights"  # the folder of the older side's saved checkpoints (upgrade-check's, bisect's)


def weights_flags(folder: Path, *, saves: bool) -> list[str]:
    """The weights check's flags of one side: the older side (upgrade-check's base, bisect's good
    end) saves its checkpoints in `folder`, every other side loads and compares with them."""
    return side_flags(weights_save=folder) if saves else side_flags(weights_from=folder)


def _same(a: Transformers, b: Transformers) -> bool:
    from packaging.version import Version

    if a.is_path or b.is_path:
        return a.requirement == b.requirement
    return Version(a.version) == Version(b.version)  # 5.18 is 5.18.0


def installed_mismatch(side: UpgradeSide, installed: str) -> str | None:
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
