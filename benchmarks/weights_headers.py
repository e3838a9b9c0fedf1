"""The weights check on a checkpoint's safetensors headers alone (issue 53).

    python benchmarks/weights_headers.py OUT

Writes sparse checkpoints into OUT (real headers, the data a hole): a 70B Llama (Llama 3's
shapes, 30 shards of about 5 GB as the hub ships it) and a 405B Llama (191 shards), then maps
each in a fresh process, as a sweep's worker does: the config read, the full-size model built on
the meta device, the headers read and handed to transformers' own loading pipeline
(auditor.models.checkpoints.map_onto_meta). Prints, per checkpoint, its apparent and on-disk
size, the verdict, the seconds of each step and the process's peak resident memory.
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


def main() -> None:
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


if __name__ == "__main__":
    main()
