"""model-sweep-auditor: audit every transformers model type under a serving engine's compile decorator.

The Python API (`auditor.sweep`, `auditor.read_run`, `auditor.diff`, ...) lives in
`auditor.api`; its names are loaded from there on first use, so that importing any part of the
package (a worker importing `auditor.core`) never loads the whole of it.
"""

from __future__ import annotations

__version__ = "0.1.0"


def __getattr__(name: str):
    if name.startswith("__") or name == "api":  # `api` is the submodule itself, imported below
        raise AttributeError(f"module 'auditor' has no attribute {name!r}")
    import auditor.api as api  # a plain import: `from auditor import api` would come back here

    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'auditor' has no attribute {name!r}")


def __dir__() -> list[str]:
    import auditor.api as api

    return sorted([*globals(), *api.__all__])
