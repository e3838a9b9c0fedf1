"""How to install what an optional part of the auditor needs: the one spelling of every hint.

The project's extras (pyproject.toml's [project.optional-dependencies]: vllm, sglang, ray, atlas,
upgrade, test) are installed as `pip install 'model-sweep-auditor[EXTRA]'` once the package comes
from the index; an auditor installed from a checkout (`pip install -e .`, the only way before it is
published) says `pip install -e '/the/checkout[EXTRA]'` instead, which is what works there. Every
message that tells a user to install one says it through here.
"""

from __future__ import annotations

import functools
import json
from urllib.parse import unquote, urlparse

DISTRIBUTION = "model-sweep-auditor"


def install_command(requirement: str, quoted: bool = True) -> str:
    """`pip install 'REQUIREMENT'` (quoted, so that a shell leaves brackets and `>=` alone)."""
    return f"pip install '{requirement}'" if quoted else f"pip install {requirement}"


def install_hint(extra: str, quoted: bool = True) -> str:
    """How to install the extra where this auditor came from: `pip install -e '/checkout[EXTRA]'`
    from a checkout, `pip install 'model-sweep-auditor[EXTRA]'` from the index. `quoted=False` is
    the spelling vLLM's decorator adapter has always used in its error, which decorate rows can
    carry: kept byte for byte, the index's."""
    if not quoted:
        return install_command(f"{DISTRIBUTION}[{extra}]", quoted)
    return extra_install(extra, checkout())


def nox_hint() -> str:
    """How to get nox (and uv, for fast venvs): the `upgrade` extra."""
    return f"{install_hint('upgrade')} (nox, and uv for fast venvs)"


def extra_install(extra: str, source: str) -> str:
    """The command that installs `extra` of the auditor installed from `source` (a checkout's path,
    or "" for the index)."""
    if source:
        return f"pip install -e '{source}[{extra}]'"
    return install_command(f"{DISTRIBUTION}[{extra}]")


@functools.cache
def checkout() -> str:
    """The checkout this auditor is installed from in editable mode (PEP 610's direct_url.json of
    the installed distribution), or "" (installed from the index or a wheel, or not installed)."""
    import importlib.metadata

    # Every record of the name: run from the checkout itself, its egg-info folder is found first.
    for distribution in importlib.metadata.distributions(name=DISTRIBUTION):
        text = distribution.read_text("direct_url.json")
        if text:
            return editable_source(json.loads(text))
    return ""


def editable_source(direct_url: dict) -> str:
    """The local folder of an editable install's direct_url.json record; "" for any other."""
    url = urlparse(str(direct_url.get("url", "")))
    if url.scheme != "file" or not (direct_url.get("dir_info") or {}).get("editable"):
        return ""
    return unquote(url.path)
