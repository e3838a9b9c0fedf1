"""Comparing transformers releases: `upgrade-check`, `bisect` and `versions` as a Python API.

    from auditor import upgrade

    plan = upgrade.plan_check("5.17.0", "5.18.0", models=["llama"])
    outcome = upgrade.run_check(plan)          # both sides installed and swept
    changes = auditor.diff(outcome.base, outcome.new)

    probe = upgrade.bisect_probe("llama", "decorate/decoder/legacy", outdir=Path("reports/b"))
    found = upgrade.bisect_releases(probe, "5.13.0", "5.18.0")

    report = upgrade.run_versions(upgrade.plan_versions(">=5.20,<5.25"))

Each function raises `auditor.core.errors` kinds (InputError for bad input, found before any venv
is touched; RunInterrupted on Ctrl-C) and reports progress to a `SideEvents`; none prints.
The names are loaded on first use. The venvs these commands install and sweep are made and run by
the layer below, auditor.environments (whose releases.py and sides/noxfile.py nox's own
interpreter imports); the sides install the auditor that runs the command
(auditor/environments/selfdist.py), so all of this works from a pip install;
`engines=["vllm==0.33.0"]` on each plan_* installs an engine too.
"""

from __future__ import annotations

# name -> its module: upgrade's own, or the environments layer's (the venvs these commands run in).
_EXPORTS = {
    "SideEvents": "auditor.environments.runner", "index_releases": "auditor.environments.releases",
    "UpgradeOutcome": "check", "plan_check": "check", "run_check": "check",
    "Probe": "bisect_run", "ReleaseBisection": "bisect_run", "CommitBisection": "bisect_run",
    "StepOutcome": "bisect_run", "bisect_probe": "bisect_run", "bisect_releases": "bisect_run",
    "bisect_commits": "bisect_run", "bisect_step": "bisect_run",
    "VersionsPlan": "versions", "VersionsReport": "versions", "plan_versions": "versions",
    "run_versions": "versions", "merge_versions": "versions",
}
__all__ = sorted(_EXPORTS)
_RENAMED = {"UpgradeEvents": "SideEvents"}  # earlier names, still given


def __getattr__(name: str):
    name = _RENAMED.get(name, name)
    if name not in _EXPORTS:
        raise AttributeError(f"module 'auditor.upgrade' has no attribute {name!r}")
    import importlib

    module = _EXPORTS[name]
    return getattr(importlib.import_module(module if "." in module else f"auditor.upgrade.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
