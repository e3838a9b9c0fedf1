#!/usr/bin/env bash
# A venv with vLLM (its own torch build) and the auditor, for the engine's own-code tests.
#   scripts/install_vllm.sh VENV [VERSION] [TRANSFORMERS]
# (no VERSION: the newest release record's, with its tested transformers: scripts/engine_release.py)
# First a plain `pip install vllm==VERSION`. Where the package index lacks one of its pins (this
# project's CI index lacks flashinfer-python==0.7.3, which vLLM 0.34.0 pins), the requirements from
# the wheel's own METADATA are installed with that pin relaxed to the nearest release the index has
# (`--upgrade-strategy only-if-needed`), then the wheel with --no-deps. Only CI and this project's
# developers take this second path; the auditor's own installs (`--engine`, upgrade-check) do not.
set -euo pipefail
venv=${1:?usage: install_vllm.sh VENV [VERSION] [TRANSFORMERS]}
repo="$(cd "$(dirname "$0")/.." && pwd)"

python3 -m venv "$venv"
. "$venv/bin/activate"
pip install -q --upgrade pip packaging >/dev/null
# CI: packages another engine venv shares (scripts/link_shared.py), linked in before any install.
[ -n "${AUDITOR_SHARED_SITE:-}" ] && python "$repo/scripts/link_shared.py" "$AUDITOR_SHARED_SITE"
# No VERSION: the release the records test (the newest record) and its tested transformers.
if [ -z "${2:-}" ]; then
  read -r version tested < <(python "$repo/scripts/engine_release.py" vllm)
  transformers=${3:-$tested}
else
  version=$2
  transformers=${3:-}
fi
echo "install_vllm: vllm==$version${transformers:+ with transformers==$transformers}" >&2

# The locked set for this release where the project has one (constraints/vllm-VERSION.txt): every pip
# call below installs within it, so a new release of any dependency cannot change what CI tests.
lock="$repo/constraints/vllm-$version.txt"
[ -f "$lock" ] && export PIP_CONSTRAINT="$lock"
extra=()
[ -n "$transformers" ] && extra+=("transformers==$transformers")
err=$(mktemp)
trap 'rm -f "$err"' EXIT
if ! pip install -q "vllm==$version" "${extra[@]}" 2>"$err"; then
  echo "install_vllm: plain install failed ($(grep -m1 -o 'No matching distribution found for [^ ]*' "$err" || tail -1 "$err")); installing the wheel's own requirements" >&2
  wheels=$(mktemp -d)
  pip download -q --no-deps "vllm==$version" -d "$wheels"
  wheel=$(ls "$wheels"/vllm-*.whl)
  python - "$wheel" "$transformers" >"$wheels/reqs.txt" <<'EOF'
import sys, zipfile, subprocess
from packaging.requirements import Requirement
wheel, transformers = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
for line in lines:
    if not line.startswith("Requires-Dist: "):
        continue
    req = Requirement(line.removeprefix("Requires-Dist: "))
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    name = req.name.lower()
    if name == "transformers" and transformers:
        print(f"transformers=={transformers}")
    elif name == "flashinfer-python":
        # pinned to a release this index may lack: the nearest at or above it.
        print(f"flashinfer-python>={next(iter(req.specifier)).version}")
    else:
        req.marker = None
        print(req)
EOF
  pip install -q -r "$wheels/reqs.txt"
  pip install -q --no-deps "$wheel"
  rm -rf "$wheels"
fi
# The auditor without touching the engine's pins, and what its tests need; timm, which 12 model types
# import (their vision backbones) and vLLM does not ask for, so that its own code decides them too.
pip install -q --no-deps -e "$repo"
pip install -q pytest pytest-xdist psutil pandas jinja2 accelerate cloudpickle tqdm timm
python -c "import vllm, transformers, torch; print('vllm', vllm.__version__, 'transformers', transformers.__version__, 'torch', torch.__version__)"
