#!/usr/bin/env bash
# Writes constraints/test.txt anew: the README's test install without the lock, in a fresh venv, frozen.
# Run it on purpose (a new transformers to test against), then run the tests and commit both together.
#   scripts/lock.sh [PYTHON]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
"${1:-python3}" -m venv "$venv"
. "$venv/bin/activate"
pip install -q torch==2.13.0 && pip install -q -e "$repo[test,ray]"
{
  sed -n '/^#/p' "$repo/constraints/test.txt"
  pip freeze --exclude-editable | sed -E 's/^(torch==[0-9.]+)\+cpu$/\1/'
} >"$repo/constraints/test.txt.new"
mv "$repo/constraints/test.txt.new" "$repo/constraints/test.txt"
grep -E '^(torch|transformers)==' "$repo/constraints/test.txt"
