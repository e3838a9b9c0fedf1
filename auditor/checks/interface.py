"""What a check is: a named object that turns a model case into results.

A check may raise; the worker maps any exception to a status (auditor.errors), so a
check only handles the outcomes that are its own (a refusal, a skip).
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from dataclasses import dataclass

from auditor.cases import ModelCase
from auditor.results import Result


@dataclass(frozen=True)
class Options:
    """What checks need to know of the command line; sent to every worker."""

    policies: tuple[str, ...] = ("legacy", "fixed", "fixed-no-config-skip")
    checks: tuple[str, ...] = ("build",)


class Check(abc.ABC):
    """A check: `name` is the first part of its results' column."""

    name: str = ""

    @abc.abstractmethod
    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        """Yield the results of this check for one model type."""


class CaseContext:
    """What the checks of one model type share inside a worker: its config and meta model.

    Made lazily and dropped after the model type, so one type never sees another's objects.
    """

    def __init__(self, case: ModelCase, options: Options) -> None:
        self.case = case
        self.options = options
        self._config: object = None
        self._model: object = None
        self._failure: BaseException | None = None

    def config(self):
        from auditor.meta import make_config

        if self._config is None:
            self._config = make_config(self.case.model_type)
        return self._config

    def model(self):
        """The plain meta-built model, built once; re-raises the build's failure each time."""
        from auditor.meta import build_on_meta

        if self._failure is not None:
            raise self._failure
        if self._model is None:
            config = self.config()
            try:
                self._model = build_on_meta(config)
            except BaseException as exc:
                self._failure = exc
                raise
        return self._model
