"""The weights check on a checkpoint's safetensors headers alone (issue 53).

    python benchmarks/weights_headers.py OUT

Writes sparse checkpoints into OUT (real headers, the data a hole): a 70B Llama (Llama 3's
shapes, 30 shards of about 5 GB as the hub ships it) and a 405B Llama (191 shards), then maps
each in a fresh process, as a sweep's worker does: the config read, the full-size model built on
the meta device, the headers read and handed to transformers' own loading pipeline
(auditor.models.checkpoints.map_onto_meta). Prints, per checkpoint, its apparent and on-disk
size, the verdict, the seconds of each step and the process's peak resident memory.

Run with the interpreter of a venv that has vLLM (`.venv-vllm/bin/python`, VLLM_TARGET_DEVICE=cpu),
each checkpoint also goes through vLLM's own weight loader on the meta device, fed meta tensors of
the headers (auditor.engines.vllm.loading.load), in a fresh process of its own: its seconds
(vLLM's import and one-process group apart, as a sweep's worker has them made) and peak memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from auditor.models.checkpoints import checkpoint_tensors, map_onto_meta
from auditor.models.meta import load_checkpoint_config
from pathlib import Path
t1 = time.perf_counter()
config = load_checkpoint_config(sys.argv[1])
tensors = checkpoint_tensors(Path(sys.argv[1]))
t2 = time.perf_counter()
mapped = map_onto_meta(config, tensors)
t3 = time.perf_counter()
print(json.dumps({"clean": mapped.clean, "tensors": mapped.tensors, "class": mapped.model_class,
                  "import_s": t1 - t0, "headers_s": t2 - t1, "map_s": t3 - t2,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

VLLM_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from auditor.engines.vllm import loading, preparation
preparation.warm_up()  # vLLM's import and its one-process group: a worker's, before any row
t0 = time.perf_counter()
found = loading.load(Path(sys.argv[1]), "llama")
t1 = time.perf_counter()
status = found[0] if isinstance(found, tuple) else found.status
message = found[1] if isinstance(found, tuple) else found.message
print(json.dumps({"status": str(status), "message": message[:200], "load_s": t1 - t0,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    import importlib.util
    import os

    from transformers import LlamaConfig

    from tests.checks.checkpoint_files import llama_70b, model_tensors, write_checkpoint

    out = Path(sys.argv[1])
    big = LlamaConfig(hidden_size=16384, intermediate_size=53248, num_hidden_layers=126, num_attention_heads=128,
                      num_key_value_heads=8, vocab_size=128256, architectures=["LlamaForCausalLM"],
                      dtype="bfloat16", tie_word_embeddings=False)
    for name, config, shards in (("llama-70b", llama_70b(), 30), ("llama-405b", big, 191)):
        folder = out / name
        if not folder.exists():
            write_checkpoint(folder, config, model_tensors(config), shards=shards)
        files = list(folder.glob("*.safetensors"))
        apparent = sum(p.stat().st_size for p in files) / 1e9
        on_disk = sum(p.stat().st_blocks * 512 for p in files) / 1e6
        proc = subprocess.run([sys.executable, "-c", CHILD, str(folder)], capture_output=True, text=True,
                              cwd=ROOT, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
        if proc.returncode:
            print(proc.stderr[-2000:])
            continue
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{name}: {len(files)} files, {apparent:.1f} GB apparent, {on_disk:.1f} MB on disk; "
              f"{figures['class']} {figures['tensors']} tensors, clean={figures['clean']}; import "
              f"{figures['import_s']:.2f} s, config+headers {figures['headers_s']:.2f} s, map {figures['map_s']:.2f} s, "
              f"peak {figures['peak_mb']:.0f} MB")
        if importlib.util.find_spec("vllm") is None:
            continue
        proc = subprocess.run([sys.executable, "-c", VLLM_CHILD, str(folder)], capture_output=True, text=True,
                              cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1",
                                             "VLLM_TARGET_DEVICE": os.environ.get("VLLM_TARGET_DEVICE", "cpu")})
        if proc.returncode:
            print(proc.stderr[-2000:])
            continue
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{name} through vLLM's loader on meta: {figures['status']} ({figures['message']}); "
              f"{figures['load_s']:.2f} s, peak {figures['peak_mb']:.0f} MB")


if __name__ == "__main__":
    main()
