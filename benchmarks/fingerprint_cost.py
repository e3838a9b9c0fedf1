"""What the build row's config fingerprint costs, against the meta build it rides on.

    HF_HUB_OFFLINE=1 python benchmarks/fingerprint_cost.py [--models llama,gpt2,...]

Makes each default config, times config_fingerprint() on it and the plain meta build of it,
and prints both totals and their ratio, and the bytes the fingerprints add to results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="llama,gpt2,bert,t5,whisper,qwen2_vl,llava,mistral,mixtral,gemma3,"
                                            "phi3,falcon,opt,vit,clip,bart,roberta,qwen3,deepseek_v3,mamba")
    args = parser.parse_args()
    from auditor.models.fingerprint import config_fingerprint
    from auditor.models.meta import build_on_meta, make_config

    fingerprint_s = build_s = 0.0
    size = 0
    types = [m for m in args.models.split(",") if m]
    for model_type in types:
        config = make_config(model_type)
        start = time.perf_counter()
        fingerprint = config_fingerprint(config)
        fingerprint_s += time.perf_counter() - start
        size += len(json.dumps(fingerprint))
        start = time.perf_counter()
        build_on_meta(config)
        build_s += time.perf_counter() - start
    print(f"{len(types)} model types: fingerprints {fingerprint_s * 1000:.1f} ms, meta builds {build_s * 1000:.0f} ms, "
          f"ratio {fingerprint_s / build_s:.4f}; {size / len(types):.0f} bytes of results.jsonl per type")


if __name__ == "__main__":
    main()
