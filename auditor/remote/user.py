"""A user's own remote-code model directory, named with `auditor sweep --remote-code DIR`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from auditor.models.cases import ModelCase

PREFIX = "remote:"


class RemoteCodeError(ValueError):
    """A --remote-code directory that cannot be audited; the message says why."""


def remote_cases(directories: Iterable[str]) -> list[ModelCase]:
    """One case per directory, named `remote:<directory name>`; checked before any work starts."""
    found: dict[str, ModelCase] = {}
    for directory in directories:
        case = remote_case(directory)
        other = found.get(case.model_type)
        if other is not None and other.remote_code != case.remote_code:
            raise RemoteCodeError(f"--remote-code {other.remote_code} and {case.remote_code} have the same name; "
                                  "rename one of the directories")
        found[case.model_type] = case
    return list(found.values())


def remote_case(directory: str) -> ModelCase:
    path = Path(directory).expanduser().resolve()
    if not path.is_dir():
        raise RemoteCodeError(f"--remote-code {directory}: not a directory")
    try:
        data = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except OSError as exc:
        raise RemoteCodeError(f"--remote-code {directory}: cannot read config.json ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise RemoteCodeError(f"--remote-code {directory}: config.json is not JSON ({exc.msg})") from None
    auto_map = data.get("auto_map") if isinstance(data, dict) else None
    if not isinstance(auto_map, dict) or "AutoConfig" not in auto_map:
        raise RemoteCodeError(f"--remote-code {directory}: config.json has no auto_map.AutoConfig, so it is not remote code")
    elsewhere = sorted(name for name, ref in auto_map.items() if isinstance(ref, str) and "--" in ref)
    if elsewhere:
        # "repo--module.Class" makes transformers fetch and run code from another repository.
        raise RemoteCodeError(f"--remote-code {directory}: auto_map entries {', '.join(elsewhere)} point at code "
                              "in another repository; only code inside the directory is run")
    return ModelCase(PREFIX + path.name, source="remote-code", remote_code=str(path))
