"""nox sessions: the sweep per Python version, the merged report, the nightly history, the atlas,
the two sides of `auditor upgrade-check`, the vLLM sweep, tests, the docs and lint.

Environment variables (all optional):
  AUDITOR_RUN_ID        run directory under reports/, one name as `auditor sweep --run-id` takes
                        (default: today's UTC date, YYYY-MM-DD)
  AUDITOR_TORCH         torch version installed first in every venv (default 2.13.0)
  AUDITOR_TORCH_INDEX   index URL for torch only, e.g. https://download.pytorch.org/whl/cpu
  AUDITOR_TRANSFORMERS  pip requirement for transformers: "transformers==5.18.0", a wheel or a
                        source directory (default: the newest release; for the sweep sessions
                        of a run, the newest release that every Python of the run can install,
                        resolved once per run id, so the Pythons differ in Python only)
  AUDITOR_PYTHONS       the Pythons of the run's sweep sessions, e.g. "3.10,3.11" (default:
                        those of 3.10-3.14 that have an interpreter here)
  AUDITOR_HISTORY_KEEP  nights kept in reports/history/py3.X/ (default 30)
  AUDITOR_EXPECTED      the folder of the nightly gate's expected baselines, py3.X.csv each
                        (`auditor baseline`; default expected/, a missing file: no baseline)
  AUDITOR_EXTRAS        the project's extras in the upgrade_check venvs, e.g. "[ray]" (set by
                        `auditor versions --executor ray`; default none)
  AUDITOR_ATLAS         the atlas the `atlas` session adds the night's runs to, carried from
                        night to night (default reports/atlas/; its site in site/)

A Python version without an interpreter is skipped, not failed; interpreters installed with
pyenv are found even when pyenv has not put them on PATH.
"""

from __future__ import annotations

import datetime
import os
import shutil
import sys
from pathlib import Path

import nox
import nox.virtualenv
from nox.command import CommandFailed

ROOT = Path(__file__).resolve().parent
# nox's interpreter need not have the project installed: its source is importable from here.
sys.path.insert(0, str(ROOT))
# The sides of upgrade-check (sessions upgrade_check(base) and upgrade_check(new)) ship inside the
# package, so that a pip install runs them too; importing them registers them here as well, and
# `install` is the one rule of what every venv gets.
from auditor.environments.sides.noxfile import install as _install  # noqa: E402
from auditor.environments.sides.noxfile import upgrade_check  # noqa: E402, F401

PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]
# The Python of the single-version sessions: the one with a local CPU build of torch here.
MAIN_PYTHON = "3.11"
REPORTS = ROOT / "reports"
HISTORY = REPORTS / "history"

nox.options.sessions = ["tests", "lint"]
nox.options.error_on_missing_interpreters = False
# Skip a missing Python rather than download a standalone build of it.
nox.options.download_python = "never"


def _pyenv_paths() -> list[str]:
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    return sorted(str(p / "bin") for p in root.glob("3.*") if (p / "bin").is_dir())


# Make pyenv's interpreters visible to nox's interpreter lookup (pyenv's shims only run the
# versions `pyenv global` selects; the others fail, and discovery then skips them).
os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), *_pyenv_paths()])


def _run_id(session: nox.Session) -> str:
    """AUDITOR_RUN_ID, or today's UTC date: one name under reports/, by the sweep's --run-id rule."""
    from auditor.core.errors import InputError
    from auditor.core.results import check_run_id

    text = os.environ.get("AUDITOR_RUN_ID") or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    try:
        return check_run_id(text, "AUDITOR_RUN_ID")
    except InputError as exc:
        session.error(str(exc))


def _run_pythons() -> list[str]:
    named = [v.strip() for v in os.environ.get("AUDITOR_PYTHONS", "").split(",") if v.strip()]
    return named or [v for v in PYTHONS if shutil.which(f"python{v}")]


def _run_transformers(session: nox.Session) -> str:
    """The transformers of every sweep session of this run: AUDITOR_TRANSFORMERS, or the newest
    release that every Python of the run can install (pip's index, asked per Python), resolved by
    the first session and kept in reports/<run-id>/transformers.txt for the others."""
    if os.environ.get("AUDITOR_TRANSFORMERS"):
        return os.environ["AUDITOR_TRANSFORMERS"]
    kept = REPORTS / _run_id(session) / "transformers.txt"
    if kept.is_file():
        requirement = kept.read_text().split("\n", 1)[0].strip()
        session.log(f"transformers for this run: {requirement} ({kept})")
        return requirement
    # auditor.environments.releases needs only `packaging` (which nox itself depends on).
    from auditor.environments.releases import ReleaseError, index_releases

    pythons = _run_pythons()
    common: set[str] | None = None
    for version in pythons:
        try:
            found = set(index_releases(version))
        except ReleaseError as exc:
            session.error(f"cannot list the transformers releases for Python {version}: {exc}")
        common = found if common is None else common & found
    if not common:
        session.error(f"no transformers release installs on every Python of the run ({', '.join(pythons)}); "
                      "set AUDITOR_PYTHONS or AUDITOR_TRANSFORMERS")
    from packaging.version import Version

    requirement = f"transformers=={max(common, key=Version)}"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(f"{requirement}\nthe newest release that every Python of the run installs: {', '.join(pythons)}\n")
    session.log(f"transformers for this run: {requirement}, the newest release that Python {', '.join(pythons)} "
                "can all install (set AUDITOR_TRANSFORMERS to choose another)")
    return requirement


@nox.session(python=PYTHONS, reuse_venv=True)
def sweep(session: nox.Session) -> None:
    """The sweep on this Python version, into reports/<run-id>/py3.X/, under the run's one
    transformers (_run_transformers), with the `ray` extra where Ray installs on this Python."""
    transformers = _run_transformers(session)
    try:
        _install(session, "[ray]", transformers)
    except CommandFailed:
        session.warn(f"Ray does not install on Python {session.python}: the pickle check's Ray column is skipped")
        _install(session, "", transformers)
    label = f"py{session.python}"
    out = REPORTS / _run_id(session) / label
    fresh = () if "--resume" in session.posargs else ("--overwrite",)
    expected = _expected(label)  # its report.html and summary.md show the known failures as expected
    known = ("--expected", str(expected)) if expected.is_file() else ()
    session.run("auditor", "sweep", "-o", str(out), *fresh, "--label", label, *known, *session.posargs)


def _expected(python: str) -> Path:
    """The expected baseline of a Python's sweeps: $AUDITOR_EXPECTED/py3.X.csv (default expected/)."""
    return Path(os.environ.get("AUDITOR_EXPECTED", "expected")) / f"{python}.csv"


@nox.session(python=MAIN_PYTHON, reuse_venv=True)
def report(session: nox.Session) -> None:
    """One HTML+CSV matrix of every Python version's sweep of the run, in reports/<run-id>/."""
    run_dir = REPORTS / _run_id(session)
    sweeps = sorted(str(p) for p in run_dir.glob("py3.*") if (p / "results.jsonl").is_file())
    if not sweeps:
        session.error(f"no sweeps in {run_dir}/py3.*/ (set AUDITOR_RUN_ID to the run to report)")
    _install(session)
    session.run("auditor", "report", *sweeps, "-o", str(run_dir))


@nox.session(python=MAIN_PYTHON, reuse_venv=True)
def history(session: nox.Session) -> None:
    """The run's sweeps into the nightly history, indexed; fails on confirmed, unexpected failures.

    Each reports/<run-id>/py3.X/ is copied to reports/history/py3.X/<run-id>/; each Python's
    history gets index.html, and every night its diff.html against the night before."""
    run_id = _run_id(session)
    sweeps = sorted(p for p in (REPORTS / run_id).glob("py3.*") if (p / "results.jsonl").is_file())
    if not sweeps:
        session.error(f"no sweeps in {REPORTS / run_id}/py3.*/")
    _install(session)
    keep = max(2, int(os.environ.get("AUDITOR_HISTORY_KEEP", "30")))
    regressed = []
    for sweep_dir in sweeps:
        nights = HISTORY / sweep_dir.name
        previous = [d for d in sorted(nights.glob("*")) if d.is_dir() and d.name < run_id]
        shutil.copytree(sweep_dir, nights / run_id, dirs_exist_ok=True)
        for old in previous[: max(0, len(previous) + 1 - keep)]:
            shutil.rmtree(old)
        session.run("auditor", "report", "--history", str(nights))
        if previous:  # diff.html and diff.md; the gate below decides
            session.run("auditor", "diff", str(previous[-1]), str(nights / run_id), success_codes=[0, 1])
        if not _gate(session, nights / run_id, previous[-1] if previous else None, sweep_dir.name):
            regressed.append(sweep_dir.name)
    if regressed:
        session.error(f"confirmed, unexpected failures on {', '.join(regressed)} (see gate.md)")


def _gate(session: nox.Session, tonight: Path, before: Path | None, python: str) -> bool:
    """`auditor gate` on tonight's run: its gate.md goes to the job's step summary too. A baseline
    at $AUDITOR_EXPECTED/py3.X.csv (default expected/), when there is one, says which failures are
    known."""
    expected = _expected(python)
    words = ["auditor", "gate", str(tonight), "--markdown", str(tonight / "gate.md")]
    words += ["--against", str(before)] if before is not None else []
    words += ["--expected", str(expected)] if expected.is_file() else []
    try:
        session.run(*words)
        passed = True
    except CommandFailed:
        passed = False
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and (tonight / "gate.md").is_file():
        with open(summary, "a", encoding="utf-8") as out:
            out.write(f"\n## {python}\n\n" + (tonight / "gate.md").read_text(encoding="utf-8"))
    return passed


@nox.session(python=MAIN_PYTHON, reuse_venv=True)
def atlas(session: nox.Session) -> None:
    """The night's runs into the atlas carried from night to night ($AUDITOR_ATLAS, default
    reports/atlas/), its site rendered into its site/ (what the nightly publishes to Pages): each
    reports/<run-id>/py3.X/ is added with `auditor atlas --add`, or the run folders given after
    `--`. `nox -s atlas --no-venv --no-install -- RUN...` runs it on this interpreter."""
    runs = session.posargs or sorted(str(p) for p in (REPORTS / _run_id(session)).glob("py3.*")
                                     if (p / "results.jsonl").is_file())
    if not runs:
        session.error(f"no sweeps in {REPORTS / _run_id(session)}/py3.*/ (set AUDITOR_RUN_ID, or name run folders)")
    if not isinstance(session.virtualenv, nox.virtualenv.PassthroughEnv):
        _install(session, "[atlas]")
    directory = Path(os.environ.get("AUDITOR_ATLAS") or REPORTS / "atlas")
    session.run("auditor", "atlas", str(directory), "--add", *runs)


def _releases(engine: str) -> list[str]:
    """The releases the emulation of `engine` has a record of (auditor/engines/<engine>/): the nox
    sessions pin them, so a new record is a new session and nothing here changes."""
    from auditor import engines

    return [release.version for release in engines.get(engine).releases]


@nox.session(python=MAIN_PYTHON, reuse_venv=True)
@nox.parametrize("release", _releases("vllm"))
def vllm(session: nox.Session, release: str) -> None:
    """The tests of vLLM's own compile path; the sweep under vLLM's own decorator next to the legacy
    copy, and the backend check's gates by vLLM's own functions next to the emulation, into
    reports/<run-id>/vllm-<release>/; then `auditor agree` over every type (fails on any
    disagreement). One session per release record: `nox -s "vllm(release='0.34.0')"`."""
    # vLLM pins its own torch (a CUDA build) and its transformers range, so neither is installed first.
    session.install("--upgrade", "-e", ".[test]", f"vllm=={release}")
    session.run("python", "-m", "pytest", "-q", "tests/engines/test_vllm_own_compile.py",
                "tests/engines/test_vllm_constructor.py")
    # upgrade-check with vLLM on both sides: installs it twice more (GBs), so only here.
    session.run("python", "-m", "pytest", "-q", "tests/engines/test_vllm_upgrade_check.py",
                env={"AUDITOR_VLLM_UPGRADE": "1"})
    out = REPORTS / _run_id(session) / f"vllm-{release}"
    session.run("auditor", "sweep", "--checks", "build,decorate,backend,serves", "--policies", "legacy,vllm",
                "-o", str(out), "--overwrite", "--label", f"vllm {release}", *session.posargs)
    session.run("auditor", "agree", str(out), "--policies", "legacy,vllm")


@nox.session(python=MAIN_PYTHON, reuse_venv=True)
@nox.parametrize("release", _releases("sglang"))
def sglang(session: nox.Session, release: str) -> None:
    """The tests of SGLang's own code (tests/engines/SGLANG_TESTS: its gate functions, its own model
    loader); SGLang's whole answer (`serves`) and the backend check's SGLang gates by SGLang's own
    code next to the emulation over every type, into reports/<run-id>/sglang-<release>/; then
    `auditor agree` (fails on any disagreement)."""
    # SGLang pins its own torch and transformers (its release record: 0.5.23 pins torch 2.14.1 and
    # transformers 5.19.0); the record's torch first, as scripts/install_sglang.sh does.
    from auditor.engines.sglang.releases import RELEASES

    session.install(f"torch{next(r.torch for r in RELEASES if r.version == release)}")
    session.install("--upgrade", "-e", ".[test]", f"sglang=={release}")
    session.run("python", "-m", "pytest", "-q", *Path("tests/engines/SGLANG_TESTS").read_text().split())
    out = REPORTS / _run_id(session) / f"sglang-{release}"
    session.run("auditor", "sweep", "--checks", "build,backend,serves", "--policies", "fixed,sglang",
                "-o", str(out), "--overwrite", "--label", f"sglang {release}", *session.posargs)
    session.run("auditor", "agree", str(out), "--policies", "fixed,sglang")


@nox.session(python=MAIN_PYTHON)
def tests(session: nox.Session) -> None:
    _install(session, "[test]")
    session.run("python", "-m", "pytest", "-q", *session.posargs)


@nox.session(python=MAIN_PYTHON)
def docs(session: nox.Session) -> None:
    """The docs site under docs/, built with --strict into build/docs-site/; its reference pages are
    generated from the code (docs/hooks/reference.py), so the project is installed with it."""
    _install(session, "[docs]")
    session.run("python", "-m", "mkdocs", "build", "--strict", *session.posargs)


@nox.session(python=MAIN_PYTHON)
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "auditor", "tests", "benchmarks", "noxfile.py")
