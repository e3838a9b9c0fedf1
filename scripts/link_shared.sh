#!/usr/bin/env bash
# Hardlink the packages of a shared folder into the active venv's site-packages, before an engine is
# installed there: pip then sees them installed, and two engine venvs that pin the same CUDA stack
# hold one copy of it on disk (torch's nvidia-* libraries and triton: about 5 GB a venv).
#   scripts/link_shared.sh SHARED        (SHARED: a folder made by `pip install --target SHARED ...`)
# Safe for both venvs: pip removes a file before it writes one (a package upgraded or removed in one
# venv leaves the other's untouched), and what an engine pins otherwise is installed over it as usual.
# Used by CI (.ci/run), where two engine venvs are made side by side; the install scripts call it
# when AUDITOR_SHARED_SITE names such a folder.
set -euo pipefail
shared=${1:?usage: link_shared.sh SHARED}
[ -d "$shared" ] || { echo "link_shared: $shared is not a folder; nothing shared" >&2; exit 0; }
site=$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
for entry in "$shared"/*; do
  # bin/ holds the console scripts of the folder's own Python; the venv's are written by pip.
  case "$(basename "$entry")" in bin|__pycache__) continue ;; esac
  cp -al "$entry" "$site"/
done
echo "link_shared: $(ls "$shared" | grep -c '\.dist-info$') distributions from $shared" >&2
