"""The figures of the compile check for BENCHMARKS.md: the tiny-build rate and the compile sweep time.

Run: python benchmarks/compile_sweep.py [--jobs 2] [--backend aot_eager] [--device cpu]
        [--semantics vllm-ungated|vllm|plain] [--naive] [--out DIR] [--models all|a,b,c]
        [--skip-tiny] [--skip-compile] [--from DIR]

1. Tiny: `auditor sweep --checks build,tiny` over every model type; of the types that build on
   the meta device, the share whose tiny config builds on the CPU, the median and largest tiny
   parameter counts, and every failure with its reason.
2. Compile: `auditor sweep --checks compile` over every model type (those that do not build tiny
   end in one quick `skipped` row), timed; the count per status and the slowest ten types.
   `--semantics`: vllm-ungated (the default: vLLM's way, three lengths, every type compiled even
   where vLLM's gates stop it: the most work the check can do), vllm (the sweep's default: the
   types vLLM stops are not compiled) or plain (two lengths, guards kept).
3. With --naive, the naive reference next to it (benchmarks/compile_naive.py: the same tiny
   models compiled the vLLM way in one process, no isolation, no rows), timed the same way, and
   the ratio of the two wall times.

The runs are kept under --out (default reports/bench-compile) as DIR/tiny and DIR/compile; `--from
DIR` only summarizes runs made before (DIR/tiny and DIR/compile, or DIR itself when it is one
compile run, as scripts/gpu_check.sh makes). Prints the Markdown for BENCHMARKS.md, with the machine's
load average before and after each run (the cores may be shared with other work).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_sweep(out: Path, checks: str, args: argparse.Namespace, extra: list[str]) -> dict:
    command = [sys.executable, "-m", "auditor", "sweep", "--checks", checks, "--jobs", str(args.jobs),
               "-o", str(out), "--overwrite", *extra]
    if args.models != "all":
        command += ["--models", args.models]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    load_before = os.getloadavg()
    cpu_before = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu_before
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:])} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    timing = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in os.getloadavg()], "command": "auditor " + " ".join(command[3:]),
              "jobs": args.jobs}
    (out / "timing.json").write_text(json.dumps(timing, indent=2))
    return timing


def _children_cpu() -> float:
    """CPU seconds of every finished child process tree (the sweep and the workers it waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rows(out: Path, check: str) -> list[dict]:
    lines = (out / "results.jsonl").read_text().splitlines()[1:]
    return [row for row in map(json.loads, lines) if row.get("check") == check]


def timing_of(out: Path) -> dict:
    path = out / "timing.json"
    return json.loads(path.read_text()) if path.exists() else {}


def tiny_section(out: Path) -> list[str]:
    build = {r["model_type"]: r["status"] for r in rows(out, "build")}
    tiny = {r["model_type"]: r for r in rows(out, "tiny")}
    meta_ok = sorted(t for t, status in build.items() if status == "build")
    ok = [t for t in meta_ok if tiny[t]["status"] == "build"]
    params = sorted(tiny[t]["extras"]["tiny_parameters"] for t in ok)
    largest = sorted(ok, key=lambda t: -tiny[t]["extras"]["tiny_parameters"])[:5]
    largest_text = ", ".join(f"{t} {tiny[t]['extras']['tiny_parameters'] / 1e6:.1f} M" for t in largest)
    timing = timing_of(out)
    lines = [
        f"- `{timing.get('command', 'auditor sweep --checks build,tiny')}`: {timing.get('wall_s', '?')} s, "
        f"load average {timing.get('load_before', '?')} before, {timing.get('load_after', '?')} after",
        f"- of {len(build)} model types, **{len(meta_ok)} build on the meta device; {len(ok)} of them build tiny "
        f"on the CPU ({100 * len(ok) / len(meta_ok):.1f} %)**",
        f"- tiny parameters: median **{statistics.median(params):,.0f}**, largest **{params[-1]:,}** "
        f"({largest_text}); "
        f"{sum(p > 5_000_000 for p in params)} over 5 M, {sum(p > 50_000_000 for p in params)} over 50 M",
        "- the types that build on meta but not tiny:",
        "",
        "| model type | status | reason |",
        "|---|---|---|",
    ]
    for t in meta_ok:
        if tiny[t]["status"] != "build":
            reason = " ".join(tiny[t]["message"].split())[:160].replace("|", "\\|")
            lines.append(f"| {t} | {tiny[t]['status']} | {reason} |")
    return lines


def _per_core(timing: dict) -> str:
    jobs = timing.get("jobs")
    cpu = timing.get("cpu_s")
    return f"{cpu / jobs:.0f}" if cpu and jobs else "?"


def compile_section(out: Path) -> list[str]:
    found = rows(out, "compile")
    timing = timing_of(out)
    counts = collections.Counter(r["status"] for r in found)
    slowest = sorted(found, key=lambda r: -r["seconds"])[:10]
    compiled = [r["extras"]["compile_seconds"] for r in found if r["status"] == "compiled"]
    lines = []
    if timing:  # absent for runs made outside this script (scripts/gpu_check.sh times them itself)
        lines += [
            f"- `{timing['command']}`: **{timing['wall_s']} s** for {len({r['model_type'] for r in found})} model "
            f"types, load average {timing['load_before']} before, {timing['load_after']} after",
            f"- CPU time of the sweep and its workers: {timing.get('cpu_s', '?')} s, {_per_core(timing)} s per "
            f"worker: the wall time on cores it had to itself",
        ]
    lines.append("- per status: " + ", ".join(f"{status} {n}" for status, n in counts.most_common()))
    if compiled:
        lines.append(f"- first compiled call (compile included) of the `compiled` types: median "
                     f"{statistics.median(compiled):.1f} s, largest {max(compiled):.1f} s")
    lines += ["", "| slowest types | status | seconds | first compiled call, s |", "|---|---|---|---|"]
    for r in slowest:
        lines.append(f"| {r['model_type']} | {r['status']} | {r['seconds']:.1f} | "
                     f"{r['extras'].get('compile_seconds', '')} |")
    return lines


def run_naive(out: Path, args: argparse.Namespace) -> dict:
    """The naive single-process loop (benchmarks/compile_naive.py), timed as run_sweep times a sweep."""
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(ROOT / "benchmarks" / "compile_naive.py"), "--backend", args.backend,
               "--models", args.models]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    load_before = os.getloadavg()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the naive loop failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    timing = {**json.loads(proc.stdout.strip().splitlines()[-1]), "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in os.getloadavg()]}
    (out / "timing.json").write_text(json.dumps(timing, indent=2))
    return timing


def naive_section(out: Path, sweep: Path) -> list[str]:
    naive, timing = timing_of(out), timing_of(sweep)
    lines = [f"- naive single-process loop (benchmarks/compile_naive.py): **{naive['wall_s']} s** for "
             f"{naive['types']} types ({naive['compiled']} compiled, {naive['failed']} failed, "
             f"{naive['timed_out']} timed out), load average {naive['load_before']} before, "
             f"{naive['load_after']} after"]
    if timing.get("wall_s"):
        lines.append(f"- the sweep over the naive loop: **{timing['wall_s'] / naive['wall_s']:.2f}x** wall time")
    return lines


_SEMANTICS = {"vllm-ungated": ["--compile-semantics", "vllm", "--compile-ungated"],
              "vllm": ["--compile-semantics", "vllm"], "plain": ["--compile-semantics", "plain"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--models", default="all")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench-compile")
    parser.add_argument("--semantics", choices=tuple(_SEMANTICS), default="vllm-ungated")
    parser.add_argument("--naive", action="store_true", help="also time the naive single-process loop")
    parser.add_argument("--skip-tiny", action="store_true")
    parser.add_argument("--skip-compile", action="store_true")
    parser.add_argument("--from", dest="source", type=Path, help="summarize the runs already in this directory")
    args = parser.parse_args()
    out = args.source or args.out
    if args.source is not None and (args.source / "results.jsonl").exists():  # one compile run
        print("\n".join(compile_section(args.source)))
        return
    if args.source is None:
        if not args.skip_tiny:
            run_sweep(out / "tiny", "build,tiny", args, ["--device", "cpu"])
        if not args.skip_compile:
            run_sweep(out / "compile", "compile", args, ["--device", args.device, "--backend", args.backend,
                                                         *_SEMANTICS[args.semantics]])
        if args.naive:
            run_naive(out / "naive", args)
    print(f"Machine: {platform.platform()}, {os.cpu_count()} cores; `--jobs {args.jobs}`.\n")
    if (out / "tiny" / "results.jsonl").exists():
        print("Tiny configs:\n")
        print("\n".join(tiny_section(out / "tiny")) + "\n")
    if (out / "compile" / "results.jsonl").exists():
        print("Compile sweep:\n")
        print("\n".join(compile_section(out / "compile")))
    if (out / "naive" / "timing.json").exists():
        print("\nNaive reference:\n")
        print("\n".join(naive_section(out / "naive", out / "compile")))


if __name__ == "__main__":
    main()
