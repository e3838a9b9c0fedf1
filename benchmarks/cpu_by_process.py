"""Where a sweep's CPU goes: CPU seconds by kind of process, and how busy the machine was.

Run: python benchmarks/cpu_by_process.py [sweep options...]   (default: the default sweep of all types)

Runs `auditor sweep` with the given options and samples every 0.5 s: each process of the
sweep's tree (its CPU time so far, by kind: parent, worker, receiver, Ray worker, Ray's own
processes) and the machine's busy cores (from /proc/stat). Prints one JSON document: wall
time, CPU seconds by kind, and the busy cores per 2-second window, which shows the start and
the end of the sweep, where fewer cores are busy than in the steady state. A process that
ends between two samples loses its last half second: the figures are a floor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_SECONDS = 0.5


def kind_of(process: psutil.Process, parent_pid: int) -> str:
    if process.pid == parent_pid:
        return "parent"
    command = " ".join(process.cmdline())
    if "spawn_main" in command:  # a pool worker or the Ray cluster's helper (children of the parent), or a receiver
        if process.ppid() != parent_pid:
            return "receiver"
        return "ray system" if any(c.name() == "gcs_server" for c in process.children()) else "worker"
    if "default_worker" in command or process.name().startswith("ray::") and "Agent" not in process.name():
        return "ray worker"
    return "ray system"


def machine_busy() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(fields), fields[3] + fields[4]  # all, idle + iowait


def main() -> None:
    options = sys.argv[1:]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "auditor", "sweep", "-o", out, "--overwrite", *options]
        start = time.perf_counter()
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        root = psutil.Process(proc.pid)
        seen: dict[int, tuple[str, float]] = {}
        busy: list[tuple[float, float]] = []
        last = machine_busy()
        while proc.poll() is None:
            time.sleep(SAMPLE_SECONDS)
            now = machine_busy()
            total, idle = now[0] - last[0], now[1] - last[1]
            last = now
            busy.append((time.perf_counter() - start, (total - idle) / total * psutil.cpu_count() if total else 0.0))
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
            for process in tree:
                try:
                    times = process.cpu_times()
                    kind = kind_of(process, proc.pid)  # again each time: a helper is a worker until its Ray starts
                    seen[process.pid] = (kind, times.user + times.system)
                except psutil.Error:
                    pass
        wall = time.perf_counter() - start
    by_kind: Counter[str] = Counter()
    for kind, seconds in seen.values():
        by_kind[kind] += seconds
    windows = {}
    for at, cores in busy:
        windows.setdefault(int(at // 2) * 2, []).append(cores)
    print(json.dumps({
        "command": " ".join(["auditor", "sweep", *options]),
        "returncode": proc.returncode,
        "wall_s": round(wall, 1),
        "cpu_s_by_kind": {kind: round(seconds, 1) for kind, seconds in by_kind.most_common()},
        "cpu_s_total": round(sum(by_kind.values()), 1),
        "busy_cores_by_2s": {f"{start}s": round(sum(v) / len(v), 2) for start, v in windows.items()},
        "cores": psutil.cpu_count(),
    }, indent=1))


if __name__ == "__main__":
    main()
