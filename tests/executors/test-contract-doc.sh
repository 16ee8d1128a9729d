#!/bin/sh
# test-contract-doc.sh — the table of docs/workload-contract.md ("The
# environment") names exactly the variables that the environment builder
# (src/executors/contract.c) can give a task, as contract-names prints them.
set -u
build=${GP_BUILD:-build}
. tests/lib/tap.sh
doc=docs/workload-contract.md
from_code=$("$build/tests/executors/contract-names" | sort -u)
from_doc=$(sed -n '/^## The environment$/,/^## /p' "$doc" | sed -n 's/^| `\([A-Za-z_][A-Za-z0-9_]*\)` |.*/\1/p' | sort -u)
rows=$(sed -n '/^## The environment$/,/^## /p' "$doc" | grep -c '^| `')
tap_ok "the builder names variables" test -n "$from_code"
tap_is "$doc names the builder's variables" "$from_doc" "$from_code"
tap_is "$doc has one row per variable" "$rows" "$(echo "$from_doc" | wc -l)"
tap_done
