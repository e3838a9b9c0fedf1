"""The atlas grid with and without Ray, and with a node killed mid-grid (issue 49).

    python benchmarks/atlas_cluster.py OUT [--releases 5.23.0,5.24.0,5.25.0] [--types 40]

Three atlases of the same grid (the releases x the first N model types of this transformers'
MODEL_MAPPING, `--checks build,backend`): without Ray (`--jobs 2`, the releases one after the
other); on a two-node Ray cluster started here (`ray start --head`, a second `ray start` joining
it, 1 CPU each, their Python with transformers 5.24.0 first on its path: a cluster of another
transformers than most of the grid); and on a fresh such cluster with the joined node killed
while its run sweeps. Prints each call's wall time, each run's seconds, and whether the `verdicts`
and `first_broken` rows, and the rows of every run (without their seconds and worker), are equal.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ray_nodes import Cluster, env, transformers_elsewhere  # noqa: E402

CHECKS = "build,backend"
ROWS = ('SELECT r.transformers, w.model_type, w."check", w.component, w.policy, w.status, w.fault, w.message '
        "FROM rows w JOIN runs r USING (run_id)")
COMPARED = {"verdicts": "SELECT * FROM verdicts", "first_broken": "SELECT * FROM first_broken", "rows": ROWS}


def first_types(count: int) -> list[str]:
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    return sorted(MODEL_MAPPING_NAMES)[:count]


def atlas(directory: Path, releases: str, models: list[str], *more: str, popen: bool = False):
    argv = [sys.executable, "-m", "auditor", "atlas", str(directory), "--transformers", releases,
            "--models", ",".join(models), "--checks", CHECKS, *more]
    if popen:
        return subprocess.Popen(argv, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, cwd=ROOT, env=env(), capture_output=True, text=True, check=False)


def query(directory: Path, sql: str) -> list[tuple]:
    import duckdb

    connection = duckdb.connect(str(directory / "atlas.duckdb"), read_only=True)
    try:
        return sorted(connection.execute(sql).fetchall(), key=repr)
    finally:
        connection.close()


def timed(label: str, call) -> float:
    start = time.monotonic()
    proc = call()
    seconds = time.monotonic() - start
    if proc.returncode:
        raise SystemExit(f"{label}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    print(f"{label}: {seconds:.1f} s wall; {summary(proc.stdout)}")
    return seconds


def summary(stdout: str) -> str:
    """The atlas's own summary line (Ray prints its notices of a node's death on stdout too)."""
    return next((line for line in stdout.splitlines() if " swept" in line), stdout.strip()[-300:])


def runs(directory: Path) -> str:
    found = query(directory, "SELECT transformers, round(seconds, 1), row_count FROM runs")
    return ", ".join(f"{t} {s} s ({n} rows)" for t, s, n in found)


def cluster_of_two(elsewhere: Path) -> Cluster:
    cluster = Cluster()
    cluster.start(cpus=1, PYTHONPATH=str(elsewhere))
    cluster.join("node", cpus=1, PYTHONPATH=str(elsewhere))
    return cluster


def killed_mid_grid(directory: Path, releases: str, models: list[str], elsewhere: Path) -> tuple[float, str]:
    with cluster_of_two(elsewhere) as cluster:
        start = time.monotonic()
        proc = atlas(directory, releases, models, "--executor", "ray", "--ray-address", cluster.address,
                     "--jobs", "1", popen=True)
        killed = ""
        while not killed and proc.poll() is None:
            for p in cluster.processes("node"):
                try:
                    words = p.cmdline()
                except Exception:
                    continue
                if "sweep" in words and "--output" in words:
                    time.sleep(3)
                    killed = Path(words[words.index("--output") + 1]).name.split("-")[0]
                    cluster.kill("node")
                    break
            time.sleep(0.5)
        stdout, stderr = proc.communicate()
        seconds = time.monotonic() - start
    if proc.returncode:
        raise SystemExit(f"killed: exit {proc.returncode}\n{stderr[-3000:]}")
    print(f"ray, node killed while sweeping {killed or '(no run seen on it)'}: {seconds:.1f} s wall; "
          f"{summary(stdout)}")
    return seconds, killed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--releases", default="5.23.0,5.24.0,5.25.0")
    parser.add_argument("--types", type=int, default=40)
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    models = first_types(args.types)
    print(f"{len(models)} types: {','.join(models)}")
    elsewhere = transformers_elsewhere("5.24.0", out)

    timed("local (--jobs 2)", lambda: atlas(out / "local", args.releases, models, "--jobs", "2"))
    print(f"  runs: {runs(out / 'local')}")
    with cluster_of_two(elsewhere) as cluster:
        timed("ray, 2 nodes x 1 CPU (--jobs 1 a run)", lambda: atlas(
            out / "ray", args.releases, models, "--executor", "ray", "--ray-address", cluster.address, "--jobs", "1"))
    print(f"  runs: {runs(out / 'ray')}")
    killed_mid_grid(out / "killed", args.releases, models, elsewhere)
    print(f"  runs: {runs(out / 'killed')}")
    for name in ("ray", "killed"):
        for what, sql in COMPARED.items():
            a, b = query(out / name, sql), query(out / "local", sql)
            print(f"{name} vs local, {what}: {len(a)} vs {len(b)} rows, {'equal' if a == b else 'DIFFERENT'}")
            if a != b:
                print("   only in one:", sorted(set(a) ^ set(b), key=repr)[:5])
        counts = query(out / name, "SELECT transformers, count(*) FROM runs GROUP BY ALL")
        print(f"{name}: runs per release {counts}")


if __name__ == "__main__":
    main()
