#!/bin/sh
# test-fairshare-ref.sh — the engine's fair-share division against a second
# implementation written from docs/fairshare.md alone (fairshare_ref.py), on
# 500 random queue trees, and its continuity in deserved quota.
set -u
build=${GP_BUILD:-build}
dir=$(dirname "$0")
exec python3 "$dir/fairshare_ref.py" "$build/tests/engine/fairshare-dump" 500 42
