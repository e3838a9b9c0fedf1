"""Running an atlas plan: runs in, the derived tables, the site out.

The added run folders go in first; then each planned run whose key the atlas does not hold yet is
swept (this interpreter's release by the normal sweep, in-process; the others in their venvs, all
installed before any sweeps, under the lock `auditor versions` takes on the same venvs; with
`--executor ray`, each run as one task on a Ray node: atlas/cluster.py) and goes in as it
finishes, whole (one transaction), so that an interrupted call keeps what it swept. The derived tables are then
computed again from every run in the database, and the site rendered from the database alone.
Nothing here prints: what a person should see goes to the AtlasEvents.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from auditor.atlas import derive, site, store
from auditor.atlas.plan import AtlasPlan, PlannedRun
from auditor.core.errors import InputError, RunInterrupted
from auditor.core.results import Run
from auditor.environments.runner import SideEvents

SITE_DIR = "site"
LOCK = "versions"  # the venvs are `auditor versions`' own (releases/RELEASE): one lock for both


class AtlasEvents(SideEvents):
    """What an atlas call tells as it goes; the default tells nothing (the CLI prints)."""

    def present(self, planned: PlannedRun) -> None:
        """A planned run is in the atlas already: it is not swept again."""

    def sweeping(self, planned: PlannedRun) -> None:
        """A planned run starts."""

    def added(self, run: Run, swept: bool, seconds: float) -> None:
        """A run went into the database."""


@dataclass(frozen=True)
class AtlasOutcome:
    directory: Path
    database: Path
    added: tuple[str, ...]  # the ids of the runs this call put in
    swept: tuple[str, ...]  # the releases this call swept
    present: tuple[str, ...]  # the releases already in
    skipped: tuple[str, ...]
    pages: int
    seconds: dict  # phase -> seconds (sweeps, derive, site)


def update(plan: AtlasPlan, events: AtlasEvents | None = None, sweep_events=None) -> AtlasOutcome:
    """Bring the atlas in `plan.directory` up to date with the plan, and write its site."""
    events = events or AtlasEvents()
    timings: dict[str, float] = {}
    start = time.monotonic()
    try:
        plan.directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write to {plan.directory}: {exc.strerror or exc}") from None
    database = plan.directory / store.DB_FILE
    connection = store.connect(database)
    added, swept, present = [], [], []
    try:
        for path in plan.adds:
            from auditor.environments.runner import read_side

            run = read_side(path, f"--add {path}: ", events)
            if not store.has_run(connection, run):
                added.append(store.add_run(connection, run, swept=False))
                events.added(run, False, 0.0)
        keys = store.present_keys(connection)
        todo = []
        for planned in plan.runs:
            if planned.key.text in keys:
                present.append(planned.release)
                events.present(planned)
            else:
                todo.append(planned)
        for planned, run, seconds in _sweep(todo, plan, events, sweep_events):
            added.append(store.add_run(connection, run, swept=True, request=planned.key, seconds=seconds))
            swept.append(planned.release)
            events.added(run, True, seconds)
        timings["runs"] = time.monotonic() - start
        mark = time.monotonic()
        # The derived tables are a function of the stored runs and of this auditor's code: made anew
        # only when either changed (a second identical call reads 120,000 rows for nothing otherwise).
        stamp = f"{store.run_set(connection)}|{_code_digest()}"
        if store.derived_stamp(connection) != stamp:
            store.replace_derived(connection, derive.derived_tables(store.stored_runs(connection)), stamp)
            timings["derive"] = time.monotonic() - mark
        else:
            timings["derive (unchanged)"] = time.monotonic() - mark
        mark = time.monotonic()
        pages = site.render_site(connection)
    finally:
        connection.close()
    written = write_site(plan.directory / SITE_DIR, pages)
    timings["site"] = time.monotonic() - mark
    return AtlasOutcome(plan.directory, database, tuple(added), tuple(swept), tuple(present), plan.skipped,
                        written, timings)


def _code_digest() -> str:
    """A digest of this auditor's own source (every module of the package): a change to how rows
    are judged or counted makes the derived tables anew."""
    import hashlib

    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def rebuild_site(directory: Path) -> int:
    """The site of an atlas again, from its database alone; the pages written."""
    connection = store.connect(directory / store.DB_FILE)
    try:
        pages = site.render_site(connection)
    finally:
        connection.close()
    return write_site(directory / SITE_DIR, pages)


def write_site(root: Path, pages: dict[str, str]) -> int:
    try:
        for name, text in pages.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the site to {root}: {exc.strerror or exc}") from None
    return len(pages)


def _sweep(todo: list[PlannedRun], plan: AtlasPlan, events: AtlasEvents, sweep_events):
    """(planned run, its runs read back, seconds) as each finishes; the venvs installed first."""
    from auditor.environments import runner

    if any(p.on_cluster for p in todo):
        from auditor.atlas.cluster import sweep_on_cluster

        yield from sweep_on_cluster(todo, plan, events)
        return
    away = [p for p in todo if not p.here]
    try:
        with runner.venv_lock(LOCK, events) if away else contextlib.nullcontext():
            for planned in away:
                runner.prepare_outdir(planned.outdir, resume=False, overwrite=True)
                _step(planned.steps[0], events)
            for planned in todo:
                events.sweeping(planned)
                start = time.monotonic()
                if planned.here:
                    runs = _sweep_here(planned, plan, sweep_events)
                else:
                    _step(planned.steps[1], events)
                    runs = (runner.read_swept(planned.steps[1].side, events,
                                              context=f"the sweep of transformers {planned.release} left no "
                                                      "readable results: ", hint=""),)
                seconds = time.monotonic() - start
                for run in runs:
                    yield planned, run, seconds
    except KeyboardInterrupt:
        raise RunInterrupted(results_path=plan.directory) from None


def _step(step, events: AtlasEvents) -> None:
    from auditor.environments import runner

    runner.run_steps([step], events)


def _sweep_here(planned: PlannedRun, plan: AtlasPlan, sweep_events) -> tuple[Run, ...]:
    """This interpreter's release, by the normal sweep (with --engine's venvs, as `sweep --engine`)."""
    from auditor.sweeping.events import SweepEvents
    from auditor.sweeping.options import make_request

    options = {k: v for k, v in dataclasses.asdict(plan.sweep).items() if v not in (None, "", (), False)}
    request = make_request(output=planned.outdir, overwrite=True, engines=plan.engines, **options)
    from auditor.environments.engine_sweeps import run_sweep

    return run_sweep(request, sweep_events or SweepEvents(), SideEvents()).all_runs
