"""Probing the environment of a run (versions, platform, git revision) into a RunInfo."""

from __future__ import annotations

import datetime
import platform
import socket
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from auditor.core.results import RunInfo


def version_of(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def public_version(version: str) -> str:
    """A version without its local label (`2.13.0+cpu` -> `2.13.0`, vLLM's `0.33.0+cpu` -> `0.33.0`):
    what a release is, for comparing runs and records; the text as it is where it is no version."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).public
    except InvalidVersion:
        return version


def git_revision() -> str:
    """The auditor's own git revision, when it runs from a checkout."""
    root = Path(__file__).resolve().parents[2]  # the checkout: auditor/core/runinfo.py
    if not (root / "pyproject.toml").is_file():  # installed (site-packages), maybe in a venv inside a checkout
        return "unknown"
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def probe(command: str, device: str, checks: tuple[str, ...], label: str = "", shard: str = "",
          experiment: dict | None = None, engines: tuple = (), selection: tuple[str, ...] | None = None,
          repeat: tuple[str, ...] | None = None) -> RunInfo:
    """The run's header; `engines`: the EngineInfo of each serving engine the sweep checks (the
    engines layer makes them: core cannot know the engines); `selection`, `repeat`: the flags that
    chose its model types and that sweep one of its cells again (the sweep layer spells them)."""
    from auditor import __version__

    return RunInfo(
        python=platform.python_version(),
        torch=version_of("torch"),
        transformers=version_of("transformers"),
        accelerate=version_of("accelerate"),
        cloudpickle=version_of("cloudpickle"),
        platform=f"{platform.system()}-{platform.machine()} {platform.release()}",
        device=device,
        auditor=__version__,
        git_revision=git_revision(),
        command=command,
        started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        hostname=socket.gethostname(),
        checks=checks,
        label=label,
        shard=shard,
        experiment=dict(experiment or {}),
        engines=tuple(engines),
        selection=None if selection is None else tuple(selection),
        repeat=None if repeat is None else tuple(repeat),
    )


def environment(engine_versions: Mapping[str, str]) -> dict[str, str]:
    """This process's environment, as `probe` writes it into a run's header (`engine_versions`:
    each engine's name -> its installed version or "emulated", from the engines layer): what a
    worker elsewhere (a Ray node) must share with the header for its rows to stand under it."""
    from auditor import __version__

    return {"python": platform.python_version(), "torch": version_of("torch"),
            "transformers": version_of("transformers"), "auditor": __version__, **dict(engine_versions)}


def environment_of(info: RunInfo) -> dict[str, str]:
    """The same fields, read from a run's header."""
    return {"python": info.python, "torch": info.torch, "transformers": info.transformers, "auditor": info.auditor,
            **{engine.name: engine.version for engine in info.engines}}


def environment_differences(header: Mapping[str, str], worker: Mapping[str, str]) -> tuple[str, ...]:
    """Each field where a worker's environment is not the header's, naming both:
    `transformers 5.25.0 (the run's header: 5.24.0)`."""
    return tuple(f"{name} {worker.get(name, 'absent')} (the run's header: {header.get(name, 'absent')})"
                 for name in sorted(set(header) | set(worker)) if header.get(name) != worker.get(name))


def cuda_problem() -> str | None:
    """Why `--device cuda` cannot work here, or None when it can (the one probe tests replace)."""
    import torch

    if not torch.backends.cuda.is_built():
        return f"this torch ({torch.__version__}) is built without CUDA"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device (check the driver and CUDA_VISIBLE_DEVICES)"
    return None


def describe_device(device: str) -> str:
    """The header's device: meta, cpu, or cuda with the GPU's name and count."""
    if device != "cuda":
        return device
    import torch

    count = torch.cuda.device_count()
    return f"cuda ({torch.cuda.get_device_name(0)}{f' x{count}' if count > 1 else ''})"
