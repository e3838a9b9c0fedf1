"""How to install what an optional part of the auditor needs: the one spelling of every hint.

The project's extras (pyproject.toml's [project.optional-dependencies]: vllm, ray, test) are
installed as `pip install 'model-sweep-auditor[EXTRA]'`; every message that tells a user to
install one says it through here.
"""

from __future__ import annotations

DISTRIBUTION = "model-sweep-auditor"
NOX_HINT = "pip install 'model-sweep-auditor[upgrade]' (nox, and uv for fast venvs)"


def install_command(requirement: str, quoted: bool = True) -> str:
    """`pip install 'REQUIREMENT'` (quoted, so that a shell leaves brackets and `>=` alone)."""
    return f"pip install '{requirement}'" if quoted else f"pip install {requirement}"


def install_hint(extra: str, quoted: bool = True) -> str:
    """`pip install 'model-sweep-auditor[EXTRA]'`. `quoted=False` is the spelling vLLM's
    decorator adapter has always used in its error, which decorate rows can carry: kept byte
    for byte."""
    return install_command(f"{DISTRIBUTION}[{extra}]", quoted)
