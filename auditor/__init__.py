"""model-sweep-auditor: audit every transformers model type under a serving engine's compile decorator.

The Python API (`auditor.sweep`, `auditor.read_run`, `auditor.diff`, ...) lives in
`auditor.api`; its names are loaded from there on first use, so that importing any part of the
package (a worker importing `auditor.core`) never loads the whole of it.
"""

from __future__ import annotations

__version__ = "0.1.0"


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from auditor import api

    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'auditor' has no attribute {name!r}")


def __dir__() -> list[str]:
    from auditor import api

    return sorted([*globals(), *api.__all__])
