#!/usr/bin/env bash
# A venv with SGLang (its own torch and transformers pins) and the auditor, for the engine's own-code tests.
#   scripts/install_sglang.sh VENV [VERSION] [TRANSFORMERS]
# (no VERSION: the newest release record's, with its tested transformers: scripts/engine_release.py)
# SGLang pins torch and transformers exactly (0.5.23: torch==2.14.1, transformers==5.19.0; its record
# says so), so the torch its record pins is installed first (on this project's CI machines a local
# wheel, no download), then `sglang==VERSION` with everything it asks. Its CUDA-only sglang-kernel
# installs everywhere and imports only beside a GPU: auditor/engines/sglang/shims.py stands in for it.
set -euo pipefail
venv=${1:?usage: install_sglang.sh VENV [VERSION] [TRANSFORMERS]}
repo="$(cd "$(dirname "$0")/.." && pwd)"

python3 -m venv "$venv"
. "$venv/bin/activate"
pip install -q --upgrade pip packaging >/dev/null
# CI: packages another engine venv shares (scripts/link_shared.py), linked in before any install.
[ -n "${AUDITOR_SHARED_SITE:-}" ] && python "$repo/scripts/link_shared.py" "$AUDITOR_SHARED_SITE"
if [ -z "${2:-}" ]; then
  read -r version tested < <(python "$repo/scripts/engine_release.py" sglang)
  transformers=${3:-$tested}
else
  version=$2
  transformers=${3:-}
fi
torch=$(python - "$repo" "$version" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from auditor.engines.sglang.releases import RELEASES
print(next((r.torch for r in RELEASES if r.version == sys.argv[2]), ""))
EOF
)
echo "install_sglang: sglang==$version${transformers:+ with transformers==$transformers}${torch:+, torch$torch}" >&2
lock="$repo/constraints/sglang-$version.txt"
[ -f "$lock" ] && export PIP_CONSTRAINT="$lock"
[ -n "$torch" ] && pip install -q "torch$torch"
extra=()
[ -n "$transformers" ] && extra+=("transformers==$transformers")
pip install -q "sglang==$version" "${extra[@]}"
# The auditor without touching the engine's pins, and what its tests need.
pip install -q --no-deps -e "$repo"
pip install -q pytest pytest-xdist psutil pandas jinja2 accelerate cloudpickle tqdm
python -c "import importlib.metadata as m, transformers, torch; print('sglang', m.version('sglang'), 'transformers', transformers.__version__, 'torch', torch.__version__)"
