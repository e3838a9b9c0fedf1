"""The `<engine>-config` checks (`vllm-config`): model types whose config class an engine replaces
with its own.

An engine may keep config classes it uses instead of transformers' for some model types (vLLM:
`vllm.transformers_utils.config._CONFIG_REGISTRY`; the engine's `Engine.config_class` says which,
auditor/engines/vllm/config.py). For those types the engine's check builds the model from the
engine's class, plainly and under each decorator policy, as extra rows (`vllm-config/build`,
`vllm-config/<component>/<policy>`). Other types get one `skipped` row. Needs the engine (its
install hint: auditor.core.hints). One check per engine that contributes config classes.
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor import engines
from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Options
from auditor.core.classifier import Phase, classify
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.engines.decorating import verdicts
from auditor.engines.interface import Engine
from auditor.models.cases import ModelCase


class EngineConfigCheck(Check):
    engine: Engine

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        from auditor.models.meta import build_on_meta, model_facts

        cls = self.engine.config_class(case.model_type)
        if cls is None:
            yield Result(case.model_type, self.name, Status.SKIPPED, component="build",
                         message=f"{self.engine.title} uses transformers' own config class for this type")
            return
        where = f"{cls.__module__}.{cls.__qualname__}"
        try:
            config = cls()
        except Exception as exc:
            yield from self.failed_rows(case, context.options, classify(exc, Phase.CONFIG))
            return
        try:
            model = build_on_meta(config)
        except Exception as exc:
            yield from self.failed_rows(case, context.options, classify(exc))
            return
        facts = model_facts(model)
        yield Result(case.model_type, self.name, Status.BUILD, component="build", message=where,
                     extras={**facts, "config_class": where})
        for verdict in verdicts(config, model, context.options.decorator_policies, context.options.shared_policy_build):
            yield verdict.result(case.model_type, self.name)

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        rows = [Result(case.model_type, self.name, failure.status, component="build",
                       message=failure.message, signature=failure.signature)]
        rows += [Result(case.model_type, self.name, failure.status, component="decoder", policy=policy,
                        message=failure.message, signature=failure.signature) for policy in options.decorator_policies]
        return rows


def _engine_check(engine: Engine) -> type[Check]:
    """The engine's check class, a name of this module (so a worker finds it as it finds the others)."""
    name = f"{engine.name.capitalize()}ConfigCheck"
    cls = type(name, (EngineConfigCheck,), {
        "name": f"{engine.name}-config", "requires": (engine.package,), "engine": engine, "__module__": __name__,
        "__doc__": f"Model types whose config class {engine.title} replaces with its own."})
    globals()[name] = cls
    return cls


for _engine in engines.all():
    if _engine.config_class is not None:
        register(_engine_check(_engine))
