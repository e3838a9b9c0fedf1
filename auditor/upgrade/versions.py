"""Running `versions`: the same sweep under several transformers releases, and their one report.

`plan_versions` resolves the releases against the package index and checks the request before
any venv is touched (InputError); `run_versions` installs every release (one reused venv each,
.nox/releases/RELEASE/), then sweeps each into OUTDIR/RELEASE/, then `merge_versions` writes the
report of every run under OUTDIR and the min/max pass table (report/ranges.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.core.errors import InputError, RunInterrupted
from auditor.core.results import RESULTS_FILE
from auditor.environments import releases, runner
from auditor.environments.releases import ReleaseError
from auditor.environments.runner import SideEvents
from auditor.environments.steps import Step, allowing_absent, parse_transformers
from auditor.environments.venvs import RELEASES_ENVDIR, release_steps
from auditor.sweeping import validate as rules
from auditor.sweeping.sides import SideSweep, side_sweep

WHAT = "versions"
RANGE_FILES = ("minmax.csv", "minmax.html")


@dataclass(frozen=True)
class VersionsPlan:
    releases: tuple[str, ...]  # oldest first
    steps: tuple[Step, ...]  # every install, then every sweep, in the order of `releases`
    outdir: Path

    @property
    def sweeps(self) -> tuple[Step, ...]:
        return self.steps[len(self.steps) // 2:]


@dataclass(frozen=True)
class VersionsReport:
    """The report of every run under `outdir`: the releases (oldest first), the min/max pass
    table's rows (report.ranges.PassRange), and the files written."""

    outdir: Path
    releases: tuple[str, ...]
    ranges: tuple
    written: tuple[Path, ...]


def plan_versions(spec: str | None, sweep: SideSweep | None = None, *, output: str | os.PathLike | None = None,
                  resume: bool = False, overwrite: bool = False, cwd: Path | None = None,
                  engines: Sequence[str] = (), **options) -> VersionsPlan:
    """The steps sweeping the releases `spec` names (5.20.0,5.22.0 or '>=5.20,<5.25'); `output`
    (relative to `cwd`) defaults to reports/versions-FIRST-to-LAST. `sweep` (a SideSweep), or its
    fields as keyword `options` (models, exclude, checks, policies, jobs, timeout, executor,
    ray_address, shard, ...), is what every release sweeps. `engines` ("vllm==0.33.0") are
    installed with every release. Bad input (a release an engine excludes among it) is an InputError."""
    from auditor.models.cases import SelectionError, parse_shard

    if not spec:
        raise InputError("name the releases: a list such as 5.20.0,5.22.0 or a specifier such as '>=5.20,<5.25'")
    sweep = side_sweep(sweep, resume=resume, **options)
    rules.check_limits(jobs=sweep.jobs, timeout=sweep.timeout, resume=resume, overwrite=overwrite)
    rules.check_selection(sweep.models, sweep.exclude)
    rules.refuse_ray_options(sweep.executor, {"ray_address": sweep.ray_address})
    slice_dir = ""
    if sweep.shard:
        try:
            index, count = parse_shard(sweep.shard)
        except SelectionError as exc:
            raise InputError(str(exc)) from None
        slice_dir = f"shard-{index}-of-{count}"
    if sweep.checks is not None:
        rules.check_names(sweep.checks)
    extras = "[ray]" if sweep.executor == "ray" else ""
    setup = runner.side_setup(WHAT, engines, extras=extras)
    try:
        chosen = releases.resolve_releases(spec, releases.index_releases())
    except ReleaseError as exc:
        raise InputError(str(exc)) from None
    for release in chosen:
        runner.refuse_excluded(setup, release, release)
    cwd = cwd or Path.cwd()
    outdir = cwd / (output or Path("reports") / f"versions-{chosen[0]}-to-{chosen[-1]}")
    sweep = allowing_absent(dataclasses.replace(
        sweep, policies=runner.engine_policies(setup, sweep.policies), executor=sweep.executor or None,
        ray_address=sweep.ray_address or None, shard=sweep.shard or None))
    pairs = [release_steps(parse_transformers(r, cwd), outdir=outdir / r / slice_dir if slice_dir else outdir / r,
                           envdir=setup.home / RELEASES_ENVDIR / r, noxfile=runner.NOXFILE, nox=setup.nox,
                           sweep=sweep, label=setup.label(r), extras=extras, env=setup.env)
             for r in chosen]
    steps = [install for install, _ in pairs] + [run for _, run in pairs]
    return VersionsPlan(tuple(chosen), tuple(steps), outdir)


def run_versions(plan: VersionsPlan, events: SideEvents | None = None, *, resume: bool = False,
                 overwrite: bool = False) -> VersionsReport:
    """Install every release, sweep each, and write the report of them all. A release that cannot
    be installed or swept is an InputError; Ctrl-C is RunInterrupted (rows kept: resume continues)."""
    events = events or SideEvents()
    for step in plan.sweeps:
        runner.prepare_outdir(step.side.outdir, resume=resume, overwrite=overwrite)
    try:
        with runner.venv_lock(WHAT, events):
            runner.run_steps(plan.steps, events)
    except KeyboardInterrupt:
        raise RunInterrupted(results_path=plan.outdir) from None
    for step in plan.sweeps:
        runner.read_swept(step.side, events, context=f"the sweep of {step.side.name} left no readable results: ",
                          hint=" (results of an earlier run? rerun with --overwrite)")
    return merge_versions(plan.outdir, events)


def merge_versions(outdir: Path, events: SideEvents | None = None) -> VersionsReport:
    """The report of every run under `outdir` (a directory per release, shards of other jobs
    included), a column group per release, and the min/max table."""
    from packaging.version import InvalidVersion, Version

    from auditor.report import write_report
    from auditor.report.ranges import ranges_csv, ranges_html, release_ranges

    events = events or SideEvents()
    paths = sorted(p.parent for p in outdir.glob(f"*/**/{RESULTS_FILE}"))
    if not paths:
        raise InputError(f"no runs under {outdir}/*/ (each release's sweep has its own directory there)")
    runs = [runner.read_side(path, "", events) for path in paths]
    try:
        runs.sort(key=lambda run: Version(run.info.transformers))
    except InvalidVersion:
        raise InputError("a run under it used a transformers that is not a release: "
                         f"{', '.join(sorted({r.info.transformers for r in runs}))}") from None
    names, ranges = release_ranges(runs, minimum=1)  # every transformers is a release: sorted above
    try:
        written = write_report(runs, outdir)
        for name, text in zip(RANGE_FILES, (ranges_csv(ranges), ranges_html(ranges, names)), strict=True):
            (outdir / name).write_text(text, encoding="utf-8")
            written.append(outdir / name)
    except OSError as exc:
        raise InputError(f"cannot write to {outdir}: {exc.strerror or exc}") from None
    return VersionsReport(outdir, tuple(names), tuple(ranges), tuple(written))
