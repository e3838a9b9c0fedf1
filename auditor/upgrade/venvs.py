"""The nox steps that sweep one transformers in a reused venv, for `bisect` and `versions`.

They are upgrade-check's own: the session `upgrade_check(new)` installs torch, this auditor and
$AUDITOR_TRANSFORMERS (a release, or a local source tree), then sweeps. Only the directory its
venv lives in differs, nox's `--envdir` under the venv home (selfdist.venv_home): `bisect` reuses
upgrade-check's own new side (upgrade_check-new/) for every release it tries, so that the bisect
that follows an upgrade-check (the usual order) only switches transformers, and the two hold one
venv, not two; `versions` keeps one per release (releases/5.20.0/), so that a second run over the same
releases installs nothing. As in upgrade-check, a release is installed in one
step and swept in another, so a release pip cannot install is told apart from a failed sweep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from auditor.sweeping.options import side_flags
from auditor.upgrade.plan import SESSION, TRANSFORMERS_ENV, Step, Transformers, UpgradeSide, side_run_flags

EXTRAS_ENV = "AUDITOR_EXTRAS"  # the project's extras in the venv, "[ray]" for --executor ray

RELEASE_SESSION = f"{SESSION}(new)"
BISECT_ENVDIR = Path(".")  # under the venv home: upgrade-check's sides live there
RELEASES_ENVDIR = Path("releases")


def only_type(model_type: str) -> list[str]:
    """Sweep options selecting one model type, that sweep to an empty run where the release lacks
    it (--allow-absent; `--models TYPE` alone would refuse the run instead)."""
    return side_flags(models=[model_type], allow_absent=True)


def release_steps(spec: Transformers, *, outdir: Path, envdir: Path, noxfile: Path, nox: Sequence[str],
                  sweep: Sequence[str], label: str, resume: bool = False, name: str = "",
                  extras: str = "", env: Mapping[str, str] | None = None) -> tuple[Step, Step]:
    """Installing `spec` into the venv under `envdir`, and sweeping it into `outdir` (absolute paths);
    `name` is how the steps call it (default: its slug, the release)."""
    if not (outdir.is_absolute() and envdir.is_absolute() and noxfile.is_absolute()):
        raise ValueError("release_steps needs absolute paths")
    side = UpgradeSide(name or spec.slug, spec, outdir)
    nox_cmd = (*nox, "--noxfile", str(noxfile), "--envdir", str(envdir), "--session", RELEASE_SESSION)
    env = {**(env or {}), TRANSFORMERS_ENV: spec.requirement, **({EXTRAS_ENV: extras} if extras else {})}
    install = Step(side, "install", (*nox_cmd, "--install-only"), env)
    run = Step(side, "sweep", (*nox_cmd, "--no-install", "--", *side_run_flags(outdir, label, resume=resume),
                               *sweep), env)
    return install, run
