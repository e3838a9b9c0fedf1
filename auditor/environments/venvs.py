"""The nox steps that sweep one transformers in a reused venv, for `bisect`, `versions`, the
atlas and `sweep --engine`.

They are upgrade-check's own: the session `upgrade_check(new)` installs torch, this auditor and
$AUDITOR_TRANSFORMERS (a release, or a local source tree), then sweeps. Only the directory its
venv lives in differs, nox's `--envdir` under the venv home (selfdist.venv_home): `bisect` reuses
upgrade-check's own new side (upgrade_check-new/) for every release it tries, so that the bisect
that follows an upgrade-check (the usual order) only switches transformers, and the two hold one
venv, not two; `versions` and the atlas keep one per release (releases/5.20.0/), so that a second
run over the same releases installs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from auditor.environments.steps import SESSION, Side, Step, Transformers, session_steps
from auditor.sweeping.sides import SideSweep

RELEASE_SESSION = f"{SESSION}(new)"
RELEASES_ENVDIR = Path("releases")


def release_steps(spec: Transformers, *, outdir: Path, envdir: Path, noxfile: Path, nox: Sequence[str],
                  sweep: SideSweep, label: str, name: str = "", extras: str = "",
                  env: Mapping[str, str] | None = None) -> tuple[Step, Step]:
    """Installing `spec` into the venv under `envdir`, and sweeping it with `sweep` into `outdir`
    (absolute paths); `name` is how the steps call it (default: its slug, the release)."""
    if not envdir.is_absolute():
        raise ValueError("release_steps needs absolute paths")
    side = Side(name or spec.slug, spec, outdir)
    return session_steps(side, session=RELEASE_SESSION, noxfile=noxfile, nox=nox, label=label, envdir=envdir,
                         sweep=sweep, env=env, extras=extras)
