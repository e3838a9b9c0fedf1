"""Which runs an `auditor atlas` call needs, checked before anything is swept (InputError).

`--transformers` names releases: a list (5.24.0,5.25.0) or a range A..B resolved against the
package index (auditor.environments.releases, the one place that asks it). Each release is one planned
run, keyed (auditor.atlas.keys) before it runs: the transformers installed here is swept by this
interpreter with the normal sweep, every other release in upgrade's reused venv of that release
(`.nox/releases/RELEASE/`, the one `auditor versions` makes and reuses), with `--engine`'s
releases installed beside it. With `--executor ray` every run is one task on a Ray node, which
makes that venv itself (auditor.atlas.cluster). A release an engine's pin excludes is skipped and said so.
Whether a planned run is already in the atlas is the caller's question (grid.py asks the
database as it goes, after the added runs are in).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from auditor.atlas.keys import RunKey, canonical, minor, public
from auditor.core.errors import InputError
from auditor.environments.steps import Step
from auditor.sweeping import validate as rules
from auditor.sweeping.sides import SideSweep, side_sweep

WHAT = "atlas"
RUNS_DIR = "runs"  # DIR/runs/<key slug>/: the run folders the atlas swept
RANGE = ".."


@dataclass(frozen=True)
class PlannedRun:
    release: str
    key: RunKey
    outdir: Path
    here: bool  # swept by this interpreter (its transformers is the release)
    steps: tuple[Step, ...] = ()  # a venv's install and sweep, where not here
    on_cluster: bool = False  # --executor ray: one task on a Ray node, in a venv made there (atlas/cluster.py)


@dataclass(frozen=True)
class AtlasPlan:
    directory: Path
    adds: tuple[Path, ...]  # run folders to import
    runs: tuple[PlannedRun, ...]  # in release order
    skipped: tuple[str, ...]  # releases left out, each with why
    sweep: SideSweep  # what every run sweeps (its selection, checks, jobs, ...; its folder aside)
    engines: tuple[str, ...] = ()


def parse_releases(spec: str, index=None) -> list[str]:
    """`5.24.0,5.25.0` as given (versions checked), or `A..B`: every final release from A to B on
    the package index (`index`: its releases, asked only for a range)."""
    from packaging.version import InvalidVersion, Version

    from auditor.environments import releases
    from auditor.environments.releases import ReleaseError

    spec = spec.strip()
    try:
        if RANGE in spec:
            low, high = (part.strip() for part in spec.split(RANGE, 1))
            return releases.releases_between(low, high, index if index is not None else releases.index_releases())
        found = []
        for part in (p.strip() for p in spec.split(",") if p.strip()):
            try:
                Version(part)
            except InvalidVersion:
                raise ReleaseError(f"{part!r} is not a release, such as 5.25.0") from None
            found.append(part)
        if not found:
            raise ReleaseError("no releases given: a list such as 5.24.0,5.25.0 or a range such as 5.20.0..5.25.0")
        return sorted(dict.fromkeys(found), key=Version)
    except ReleaseError as exc:
        raise InputError(f"--transformers: {exc}") from None


def installed_transformers() -> str:
    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return ""


def plan_atlas(directory: str | os.PathLike, sweep: SideSweep | None = None, *, transformers: str | None = None,
               add: Sequence[str] = (), engines: Sequence[str] = (), index=None, **options) -> AtlasPlan:
    """The atlas call's plan; bad input is an InputError, before any sweep or install. `sweep` (a
    SideSweep), or its fields as keyword `options` (models, exclude, checks, jobs, timeout,
    executor, ray_address), is what every release sweeps."""
    from auditor.environments import runner
    from auditor.environments.steps import allowing_absent
    from auditor.sweeping.options import DEFAULT_CHECKS, listed

    directory = Path(directory).resolve()
    adds = tuple(Path(p).resolve() for p in add)
    for path in adds:
        if not (path.is_dir() and (path / "results.jsonl").is_file()) and not path.is_file():
            raise InputError(f"--add {path}: not a run folder (no results.jsonl) nor a results file")
    if not transformers:
        if not adds:
            raise InputError("nothing to do: give --transformers RELEASES to sweep, or --add RUN to import")
        return AtlasPlan(directory, adds, (), (), SideSweep(), tuple(engines))
    sweep = side_sweep(sweep, **options)
    rules.check_limits(jobs=sweep.jobs, timeout=sweep.timeout)
    rules.refuse_ray_options(sweep.executor, {"ray_address": sweep.ray_address})
    checks = sweep.checks if sweep.checks is not None else DEFAULT_CHECKS
    rules.check_names(checks)
    chosen = parse_releases(transformers, index)
    here = installed_transformers()
    specs = runner.parse_engines(engines) if engines else ()
    # The selection in the form every release takes: each name its own --models, --allow-absent.
    models, exclude = listed(sweep.models), listed(sweep.exclude)
    sweep = allowing_absent(dataclasses.replace(sweep, models=models, exclude=exclude, checks=checks))
    selection = canonical(models, exclude)
    planned, skipped = [], []
    on_cluster = sweep.executor == "ray"
    away = [r for r in chosen if r != here]
    setup = runner.side_setup(WHAT, engines) if away or on_cluster else None
    for release in chosen:
        excluded = [s for s in specs if s.excludes(release)]
        if excluded:
            skipped.append(f"transformers {release}: outside what {excluded[0].name} {excluded[0].version} accepts "
                           f"(it requires transformers{excluded[0].transformers})")
            continue
        key = RunKey(release, _torch(release == here and not on_cluster, specs), minor(_python()),
                     tuple(sorted(s.requirement for s in specs)), tuple(sorted(listed(checks))), selection)
        outdir = directory / RUNS_DIR / key.slug
        if on_cluster:  # every run, this interpreter's release too: the node makes its environment
            planned.append(PlannedRun(release, key, outdir, False, on_cluster=True))
        elif release == here:
            planned.append(PlannedRun(release, key, outdir, True))
        else:
            planned.append(PlannedRun(release, key, outdir, False, _venv_steps(release, outdir, setup, sweep)))
    return AtlasPlan(directory, adds, tuple(planned), tuple(skipped), sweep, tuple(engines))


def _python() -> str:
    import platform

    return platform.python_version()


def _torch(here: bool, specs) -> str:
    """The torch a run of the release will have: this one's here; the sides' pin in a venv (the
    engine's own pin, unknown before it installs, where an engine is installed)."""
    if here:
        try:
            return public(metadata.version("torch"))
        except metadata.PackageNotFoundError:
            return ""
    if specs:
        return ""
    from auditor.environments.sides.noxfile import TORCH

    return public(TORCH)


def _venv_steps(release: str, outdir: Path, setup, sweep: SideSweep) -> tuple[Step, ...]:
    from auditor.environments import runner
    from auditor.environments.steps import parse_transformers
    from auditor.environments.venvs import RELEASES_ENVDIR, release_steps

    # The venv runs the local pool (the Ray executor is the cluster's: atlas/cluster.py).
    local = dataclasses.replace(sweep, executor=None, ray_address=None,
                                policies=runner.engine_policies(setup, sweep.policies))
    install, run = release_steps(parse_transformers(release, Path.cwd()), outdir=outdir,
                                 envdir=setup.home / RELEASES_ENVDIR / release, noxfile=runner.NOXFILE,
                                 nox=setup.nox, sweep=local, label="", env=setup.env)
    return install, run
