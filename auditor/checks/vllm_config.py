"""The `vllm-config` check: model types whose config class vLLM replaces with its own.

vLLM keeps a registry of config classes (`vllm.transformers_utils.config._CONFIG_REGISTRY`)
that it uses instead of transformers' class for some model types. For those types this
check builds the model from vLLM's class, plainly and under each decorator policy, as
extra rows (`vllm-config/build`, `vllm-config/<component>/<policy>`). Other types get one
`skipped` row. Needs vLLM (its install hint: auditor.core.hints); the class comes from the
engine (auditor/engines/vllm/config.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor import engines
from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Options
from auditor.core.results import Result
from auditor.core.status import Failure, Phase, Status, classify
from auditor.decorators.verdicts import verdicts
from auditor.models.cases import ModelCase

_ENGINE = engines.get("vllm")


@register
class VllmConfigCheck(Check):
    name = "vllm-config"
    requires = (_ENGINE.package,)

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        from auditor.models.meta import build_on_meta, model_facts

        cls = _ENGINE.config_class(case.model_type)
        if cls is None:
            yield Result(case.model_type, self.name, Status.SKIPPED, component="build",
                         message=f"{_ENGINE.title} uses transformers' own config class for this type")
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
