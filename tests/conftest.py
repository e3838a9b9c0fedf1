"""Shared helpers: run the real CLI in a subprocess, read what it wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "tests" / "plugins"
TROUBLEMAKERS = str(PLUGINS / "troublemakers.py")


def auditor_env() -> dict[str, str]:
    env = dict(os.environ)
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_auditor(*args: str, cwd: Path | None = None, timeout: float = 600,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`auditor ARGS` in a process of its own; `env`: variables on top of auditor_env() (None: unset)."""
    merged = {k: v for k, v in {**auditor_env(), **(env or {})}.items() if v is not None}
    return subprocess.run(
        [sys.executable, "-m", "auditor", *args],
        cwd=cwd, env=merged, capture_output=True, text=True, timeout=timeout,
    )


def run_auditors(commands: Sequence[Sequence[str]], cwd: Path | None = None, timeout: float = 900,
                 at_once: int | None = None) -> list[subprocess.CompletedProcess]:
    """Independent CLI runs side by side, each its own real process: their results, in order.

    Much of a short run is one interpreter starting up (importing torch and transformers) on one
    core, and a sweep's first and last model types keep one of its workers idle: runs that do not
    depend on each other overlap those instead of queueing. `at_once` (default: all of them)
    bounds how many run together, for many runs that each only start and refuse."""
    with ThreadPoolExecutor(max_workers=at_once or len(commands) or 1) as pool:
        return list(pool.map(lambda args: run_auditor(*args, cwd=cwd, timeout=timeout), commands))


def read_rows(outdir: Path) -> tuple[dict, list[dict]]:
    """The header and the result rows (completion records left out)."""
    lines = [json.loads(line) for line in (outdir / "results.jsonl").read_text().splitlines()]
    return lines[0], [line for line in lines[1:] if line.get("kind") == "result"]


def by_type(rows: list[dict], check: str = "build") -> dict[str, dict]:
    return {row["model_type"]: row for row in rows if row["check"] == check and not row["component"]}


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


FLAKY_MODELS = str(PLUGINS / "flaky_models.py")
FLAKY_TYPES = ("auditor_flaky_always", "auditor_flaky_fine", "auditor_flaky_flip")
# Three nights of the nightly history: auditor_flaky_flip's build count before each (even: it fails).
NIGHTS = {"2026-11-01": 0, "2026-11-02": 1, "2026-11-03": 2}
# The last night's sweep takes this expected baseline (auditor_flaky_always's oom, any signature):
# its reports and end summary show that failure as expected; its rows are the same as without.
FLAKY_BASELINE = ROOT / "tests" / "fixtures" / "flaky-baseline.csv"


@pytest.fixture(scope="session")
def flaky_sweeps(tmp_path_factory) -> dict[str, tuple[Path, subprocess.CompletedProcess]]:
    """Real sweeps of tests/plugins/flaky_models.py's three types, side by side, shared by the
    tests of reruns (tests/sweeping/test_confirm.py) and of the nightly history, baseline and gate
    (tests/report/test_nightly.py): name -> (run directory, its CLI process).

    * "reruns": the default --reruns 1 (the flipping type fails, then passes on its rerun);
    * each night of NIGHTS: --reruns 0, its counter started at the night's count, so the flipping
      type fails, builds, fails: the nights one after another, run at once. Their run directories
      are history/<night>/. The last one also has `--expected FLAKY_BASELINE` (what it changes is
      tested in tests/report/test_expected_view.py; the results are the same)."""
    tmp = tmp_path_factory.mktemp("flaky")
    plans = {"reruns": (tmp / "reruns", 0, ())}
    last = list(NIGHTS)[-1]
    plans.update({night: (tmp / "history" / night, count,
                          ("--reruns", "0", *(("--expected", str(FLAKY_BASELINE)) if night == last else ())))
                  for night, count in NIGHTS.items()})

    def sweep(name: str) -> subprocess.CompletedProcess:
        outdir, count, extra = plans[name]
        counters = tmp / "counters" / name
        counters.mkdir(parents=True)
        (counters / "auditor_flaky_flip").write_text(str(count))
        return run_auditor("sweep", "--plugin", FLAKY_MODELS, "--models", ",".join(FLAKY_TYPES), "--checks", "build",
                           "--jobs", "1", "--fail-on", "oom", "-o", str(outdir), *extra,
                           env={"AUDITOR_TEST_COUNTERS": str(counters)})

    with ThreadPoolExecutor(max_workers=len(plans)) as pool:
        done = dict(zip(plans, pool.map(sweep, plans), strict=True))
    return {name: (plans[name][0], proc) for name, proc in done.items()}


# Test files that share something no one of them owns run in one xdist worker (`-n`): the
# real-release commands of tests/upgrade/early.py use the side venvs and their lock, one after
# another; the flaky sweeps are one session fixture. Any other file is a group of its own, so its
# module-scoped sweep runs once.
SHARED_GROUPS = {
    "side-venvs": ("tests/upgrade/test_upgrade_real.py", "tests/upgrade/test_bisect_real.py",
                   "tests/upgrade/test_wheel_install.py"),
    "flaky-sweeps": ("tests/sweeping/test_confirm.py", "tests/report/test_nightly.py",
                     "tests/report/test_expected_view.py"),
}
_GROUP_OF = {path: group for group, paths in SHARED_GROUPS.items() for path in paths}


# Ray's cluster mode as the test session found it. A sweep run inside a test process keeps its local
# Ray cluster on loopback by turning that mode off for the process (auditor.remote.ray_trip.
# loopback_only: os.environ and Ray's constant), which a CLI process does once and ends with; in a
# pytest worker it outlived the test and changed later ones, depending on which worker ran what: a
# cluster a later module starts in-process came up loopback-only while the sweeps it started
# joined it in cluster mode (they hung), and `ray start --address` refused to join a head.
_RAY_CLUSTER_MODE = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Each test (and the fixtures it sets up) starts in the Ray cluster mode the session began in."""
    if _RAY_CLUSTER_MODE is None:
        os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    else:
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = _RAY_CLUSTER_MODE
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = constants.env_bool(constants.ENABLE_RAY_CLUSTERS_ENV_VAR,
                                                          not constants.IS_WINDOWS_OR_OSX)


# The groups that take longest (a minute or more on 2 cores, from the suite's --durations), longest
# first: they start first, so the suite ends on short files instead of one worker idling while the
# other runs a long one (xdist's own order, most tests first, left these few-test files to the end).
# The side venvs' group is not among them: its tests wait for the real-release commands that
# tests/upgrade/early.py starts with the session, which have time to finish while these run.
LONGEST_FIRST = (
    "tests/executors/test_device_isolation.py",
    "tests/sweeping/test_faults.py",
    "tests/executors/test_sweep.py",
    "tests/executors/test_ray_cluster.py",
    "tests/checks/test_tokenizer_check.py",
    "tests/checks/test_decorate_check.py",
    "tests/checks/test_weights_check.py",
    "tests/atlas/test_atlas_ray.py",
    "tests/checks/compile/test_compile_sweep.py",
    "tests/remote/test_ray.py",
    "tests/remote/test_sweep_pickle.py",
    "tests/report/test_release_night.py",
    "tests/sweeping/test_since_last_run.py",
    "tests/checks/test_whose_fault.py",
)


def _group(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return _GROUP_OF.get(path, path)


def pytest_collection_modifyitems(config, items):
    """In an xdist worker: the groups in the order the scheduler hands them out, LONGEST_FIRST,
    then the others by their number of tests (xdist's own order); a group's tests keep theirs."""
    if not hasattr(config, "workerinput"):
        return
    groups = [_group(item.nodeid) for item in items]
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, group in enumerate(groups):
        counts[group] = counts.get(group, 0) + 1
        first.setdefault(group, index)
    rank = {group: index for index, group in enumerate(LONGEST_FIRST)}
    key = {group: (rank.get(group, len(rank)), -counts[group], first[group]) for group in counts}
    order = sorted(range(len(items)), key=lambda index: key[groups[index]])
    items[:] = [items[index] for index in order]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's scheduler of whole groups (a file, or the group its file shares): `--dist loadfile`
    with SHARED_GROUPS (xdist's `xdist_group` marks are lost on pytest 9, whose node ids they
    rewrite), handed out in the workers' collection order (pytest_collection_modifyitems)."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class FileGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    return FileGroups(config, log)


def pytest_collection_finish(session):
    """The real-release commands of tests/upgrade start now, beside the rest of the suite; in an
    xdist worker, the one worker that runs their tests runs them when asked (early.result)."""
    from tests.upgrade import early

    if not hasattr(session.config, "workerinput"):
        early.start(session.items)


def pytest_sessionfinish(session):
    from tests.upgrade import early

    early.stop()


def pytest_terminal_summary(terminalreporter):
    """The background commands' own time, which their tests' durations do not show."""
    from tests.upgrade import early

    found = early.seconds()
    if found:
        terminalreporter.write_sep("=", "background commands (tests/upgrade/early.py)")
        for name, taken in found.items():
            terminalreporter.write_line(f"{taken:8.1f}s  {name}")


# A real headless Chromium for the browser tests (report pages, the atlas site): one per session,
# shared by every folder (a second session's Playwright in the same thread cannot start), skipped
# with a reason when it is missing.
@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed: pip install playwright")
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("chromium is not installed: apt-get install -y chromium")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A fresh page that fails the test on any JavaScript error, dialog or network request."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("request", lambda req: None if req.url.startswith(("file:", "data:", "about:"))
            else problems.append(f"network request: {req.url}"))
    page.problems = problems
    yield page
    context.close()
    assert problems == []
