"""The `legacy` policy: vLLM's positional check exactly as shipped, faults included.

Faults kept on purpose (they are what the audit measures):

* the annotation list includes `self`, so each argument is checked against the
  annotation of the parameter *before* it;
* `isinstance` itself raises TypeError for parameterized generics
  (`list[int]`, `Callable[[Tensor], Tensor]`), string annotations (from
  `from __future__ import annotations`) and `typing.Any`.
"""

from __future__ import annotations

import inspect
from typing import Any

from auditor.decorators.interface import CheckPolicy, refusal


class LegacyPolicy(CheckPolicy):
    name = "legacy"

    def check(self, module: object, signature: inspect.Signature, args: tuple[Any, ...]) -> None:
        annotations = [p.annotation for p in signature.parameters.values()]
        # strict=False: zip stops at the shorter list, as vLLM's plain zip() does.
        for arg, annotation in zip(args, annotations, strict=False):
            if annotation is inspect.Parameter.empty:
                continue
            if not isinstance(arg, annotation):
                raise refusal(module, arg)
