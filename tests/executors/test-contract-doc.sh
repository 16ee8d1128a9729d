#!/bin/sh
# test-contract-doc.sh — the table of docs/workload-contract.md ("The
# environment") names exactly the variables that the environment builder
# (src/executors/contract.c) can give a task, as contract-names prints them,
# and its MASTER_PORT row states the range of rendezvous ports that the code
# has (executor.h).
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
set -- $("$build/tests/executors/contract-names" ports)
port_row=$(sed -n '/^## The environment$/,/^## /p' "$doc" | grep '^| `MASTER_PORT` |')
row_has() { printf '%s\n' "$port_row" | grep -qF -- "$1"; }
tap_ok "its MASTER_PORT row gives the preferred port, $1 + id mod $3" \
    row_has "$1 + the workload's id mod $3"
tap_ok "and the range, $1-$2" row_has "$1-$2"
tap_done
