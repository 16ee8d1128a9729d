#!/bin/sh
# test-routes-doc.sh — docs/api.md's route table is what `gpupoold --routes`
# prints from the route table in src/daemon/api.h, row for row (3 of 26 rows
# had drifted: ?order= and ?cursor= missing from the code's, the /nodes and
# /usage texts differing).
set -u
build=${GP_BUILD:-build}
. tests/lib/tap.sh
doc=docs/api.md
routes=$("$build/gpupoold" --routes)
tap_is "gpupoold --routes exits 0" "$?" 0
# The doc's table: from its header row to the first line that is not a row.
table=$(sed -n '/^| method | path | least role | what it does |$/,/^[^|]/p' "$doc" | grep '^|')
tap_ok "$doc has the route table" test -n "$table"
tap_ok "$doc's route table is gpupoold --routes" same_lines "$table" "$routes"
tap_done
