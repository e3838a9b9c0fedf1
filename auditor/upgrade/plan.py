"""Planning `auditor upgrade-check`: its two sides, where their results go, and their nox steps.

Each side of the comparison is the nox session `upgrade_check(base)` or `upgrade_check(new)`
(auditor.environments.steps makes their steps); their virtual environments are reused from run to
run. Both sides are installed before either sweeps, so a release pip cannot find fails in a minute
rather than after the first sweep. Nothing here runs anything: check.py runs the steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.environments.steps import (
    Side,
    Step,
    Transformers,
    TransformersSpecError,
    _slug,
    session_steps,
)
from auditor.sweeping.sides import SideSweep

SIDES = ("base", "new")
WEIGHTS = "weights"  # the folder of the older side's saved checkpoints (upgrade-check's, bisect's)


@dataclass(frozen=True)
class UpgradePlan:
    base: Side
    new: Side
    outdir: Path  # holds base/, new/, the merged report and the diff
    steps: tuple[Step, ...]

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.base, self.new


def default_outdir(base: Transformers, new: Transformers, reports: Path = Path("reports"),
                   base_engines: Sequence[str] = (), new_engines: Sequence[str] = ()) -> Path:
    """reports/upgrade-5.17.0-to-5.18.0; where the engines differ (`--to-engine`), each side's are
    in its part too: upgrade-5.18.0-vllm-0.33.0-to-5.18.0-vllm-0.34.0."""
    if tuple(base_engines) == tuple(new_engines):
        return reports / f"upgrade-{base.slug}-to-{new.slug}"
    parts = ["-".join([spec.slug, *(_slug(e.replace(" ", "-")) for e in engines)])
             for spec, engines in ((base, base_engines), (new, new_engines))]
    return reports / f"upgrade-{parts[0]}-to-{parts[1]}"


def plan_upgrade(base: Transformers, new: Transformers, *, outdir: Path, noxfile: Path,
                 nox: Sequence[str], sweep: SideSweep | None = None, envdir: Path | None = None,
                 env: Mapping[str, str] | None = None, engines: Sequence[str] = (),
                 new_engines: Sequence[str] | None = None, new_env: Mapping[str, str] | None = None,
                 weights: bool = False) -> UpgradePlan:
    """Install both sides, then sweep each with `sweep` into `outdir`/base and `outdir`/new (paths
    must be absolute: nox runs its sessions from the noxfile's directory). `envdir`: where the venvs live (nox's
    default: .nox/ next to the noxfile); `env`: what else the sessions read; `engines`: the
    engines every side has, for its label ("vllm 0.33.0"); `new_engines`, `new_env`: the new
    side's, where an engine upgrade makes them differ (`--to-engine`). `weights`: the sweeps run the
    weights check: the base side saves its checkpoints in `outdir`/weights and the new side loads
    those (a checkpoint of the older release under the newer)."""
    sweep = sweep or SideSweep()
    new_engines = tuple(engines if new_engines is None else new_engines)
    if _same(base, new) and tuple(engines) == new_engines:
        raise TransformersSpecError(f"--from and --to are both {new.requirement}: nothing to compare")
    if not outdir.is_absolute() or not noxfile.is_absolute() or not (envdir is None or envdir.is_absolute()):
        raise ValueError("plan_upgrade needs absolute paths")
    sides = [Side(name, spec, outdir / name, side_engines)
             for name, spec, side_engines in zip(SIDES, (base, new), (tuple(engines), new_engines), strict=True)]
    envs = {"base": dict(env or {}), "new": dict((env if new_env is None else new_env) or {})}
    pairs = [session_steps(side, session=side.session, noxfile=noxfile, nox=nox, label=side.label, envdir=envdir,
                           sweep=with_weights(sweep, outdir / WEIGHTS, saves=side.name == SIDES[0]) if weights else sweep,
                           env=envs[side.name])
             for side in sides]
    steps = [install for install, _ in pairs] + [run for _, run in pairs]
    return UpgradePlan(base=sides[0], new=sides[1], outdir=outdir, steps=tuple(steps))


def with_weights(sweep: SideSweep, folder: Path, *, saves: bool) -> SideSweep:
    """One side's sweep of the checks across releases (weights, tokenizer): the older side
    (upgrade-check's base, bisect's good end) saves its checkpoints in `folder`, every other side
    loads and compares with them."""
    return dataclasses.replace(sweep, **{"weights_save" if saves else "weights_from": folder})


def _same(a: Transformers, b: Transformers) -> bool:
    from packaging.version import Version

    if a.is_path or b.is_path:
        return a.requirement == b.requirement
    return Version(a.version) == Version(b.version)  # 5.18 is 5.18.0


