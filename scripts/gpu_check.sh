#!/usr/bin/env bash
# The compile check on one GPU machine, as vLLM runs it, then the report:
#   1. every model type, --device cuda --backend inductor --dtype float32 (the CPU run's dtype:
#      what inductor's code generation changes, next to tracing);
#   2. every model type, --backend inductor --dtype auto (the dtype vLLM serves each type in,
#      resolved as the followed vLLM release resolves dtype="auto", named on each row);
#   3. only with AOT_EAGER=1: every model type, --backend aot_eager (tracing plus AOT autograd on the
#      GPU; measured on one H200 at f4f01d0 to give the same rows as CPU aot_eager for all 631 types).
# All compile as vLLM compiles (the sweep's default --compile-semantics vllm: its gates first,
# guards dropped, the first graph reused at 7, 13 and 29 tokens, attention on an opaque op); add
# AUDITOR_EXTRA=--compile-ungated to compile the types vLLM's gates stop too, or
# AUDITOR_EXTRA="--compile-semantics plain" for plain torch.compile. A worker whose device meets a
# sticky error (a device-side assert) retires; no other type's row carries that error.
# It installs nothing: run it where torch with CUDA, transformers and this project are installed
# (pip install -e . in an environment that has them). Several workers share the one GPU.
#
#   scripts/gpu_check.sh [OUT]      (default OUT: reports/gpu-<UTC time>)
# Environment: JOBS (default: three quarters of the cores; tracing is single-threaded Python, the
# GPU is barely busy), TIMEOUT per model type (default 240 s), PYTHON (default: python3), MODELS
# (default: every type), AOT_EAGER=1 (the third pass), AUDITOR_EXTRA (more `auditor sweep`
# options, e.g. --compile-encoders). For a dry run without a GPU:
# DEVICE=cpu MODELS=llama,gpt2 scripts/gpu_check.sh /tmp/dry
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
OUT=${1:-reports/gpu-$(date -u +%Y%m%d-%H%M%S)}
CORES=$(nproc)
JOBS=${JOBS:-$(( CORES * 3 / 4 > 1 ? CORES * 3 / 4 : 1 ))}
DEVICE=${DEVICE:-cuda}
MODELS=${MODELS:-}
TIMEOUT=${TIMEOUT:-240}
# Inductor compiles inside each worker: no pool of compile processes per worker on top of JOBS.
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1}
export HF_HUB_OFFLINE=1
[ "$DEVICE" = cuda ] && "$PYTHON" - <<'EOF'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit(f"gpu_check: torch {torch.__version__} sees no CUDA device; this script needs one GPU")
print(f"gpu_check: torch {torch.__version__}, {torch.cuda.get_device_name(0)}", file=sys.stderr)
EOF

mkdir -p "$OUT"
start=$(date +%s)
run() {  # NAME ARGS...: one timed sweep into OUT/NAME
  local name=$1; shift
  local t0=$(date +%s)
  "$PYTHON" -m auditor sweep --checks compile --device "$DEVICE" --jobs "$JOBS" --timeout "$TIMEOUT" \
    -o "$OUT/$name" --overwrite --label "$DEVICE $name" ${AUDITOR_EXTRA:-} "$@"
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/timings.txt"
}
: > "$OUT/timings.txt"
passes=(inductor inductor-auto)
run inductor --backend inductor --dtype float32 ${MODELS:+--models "$MODELS"}
run inductor-auto --backend inductor --dtype auto ${MODELS:+--models "$MODELS"}
if [ "${AOT_EAGER:-0}" = 1 ]; then
  run aot_eager --backend aot_eager --dtype float32 ${MODELS:+--models "$MODELS"}
  passes+=(aot_eager)
fi
echo "total: $(( $(date +%s) - start )) s (jobs $JOBS, $CORES cores)" | tee -a "$OUT/timings.txt"

"$PYTHON" -m auditor report "${passes[@]/#/$OUT/}" -o "$OUT/report"
for name in "${passes[@]}"; do  # counts per status and the slowest types, for BENCHMARKS.md
  "$PYTHON" benchmarks/compile_sweep.py --from "$OUT/$name" > "$OUT/$name.md"
done
cat "$OUT/timings.txt"
echo "gpu_check: results in $OUT (${passes[*]}, report/report.html, *.md, timings.txt)"
