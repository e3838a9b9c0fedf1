"""The auditor's own errors: what the Python API raises and the CLI maps to exit codes.

Every error the auditor raises on purpose is an `AuditorError` with a message meant for a
person; the CLI prints it and picks the exit code from its class (auditor.cli.EXIT_CODES).
"""

from __future__ import annotations


class AuditorError(Exception):
    """Base of the auditor's own errors."""


class InputError(AuditorError, ValueError):
    """Bad input: an option, a path, a model type, a results file that cannot be used. Found
    before any work starts wherever it can be (the CLI's exit 2)."""


class _Stop:
    """What a stopped sweep leaves: every finished row is in `results_path`, `resume_command`
    continues it, and `run` holds the rows written before it stopped (or None)."""

    def _keep(self, *, results_path=None, done: int = 0, total: int = 0, resume_command: str = "",
              run=None) -> None:
        self.results_path = results_path
        self.done = done
        self.total = total
        self.resume_command = resume_command
        self.run = run


class RunStopped(_Stop, AuditorError):
    """A sweep that could not go on: the worker pool, the Ray cluster or the results file failed
    (the CLI's exit 3)."""

    def __init__(self, message: str, **kept) -> None:
        super().__init__(message)
        self._keep(**kept)


class RunInterrupted(_Stop, KeyboardInterrupt):
    """Ctrl-C (SIGINT) during a sweep: the pool was stopped cleanly and the finished rows kept.
    A KeyboardInterrupt, not an Exception, so that `except Exception` never swallows a Ctrl-C
    (the CLI's exit 130)."""

    def __init__(self, message: str = "interrupted", **kept) -> None:
        super().__init__(message)
        self._keep(**kept)
