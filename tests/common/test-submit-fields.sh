#!/bin/sh
# test-submit-fields.sh — the copies of a submission's fields agree with the
# one list, GP_SUBMIT_FIELDS (src/common/gp_submit.h), as submit-fields
# prints it: docs/api.md's field table is the list's, row for row; the
# console's submit form sends only the list's names; `gpupool help submit`
# and the shell completion offer exactly its flags (the completion lacked
# --gpu-compute); the man page and docs/cli.md name no other flag.
set -u
build=${GP_BUILD:-build}
. tests/lib/tap.sh
fields=$build/tests/common/submit-fields

# Succeeds if every word of $1 is a line of $2; names the others.
within() {
    bad=""
    for w in $1; do
        printf '%s\n' "$2" | grep -qxF -- "$w" || bad="$bad $w"
    done
    [ -z "$bad" ] && return 0
    echo "# not in the list:$bad"
    return 1
}

names=$("$fields" names)
flags=$("$fields" flags | sort)
tap_ok "the list names fields" test -n "$names"

doc=$(doc_table docs/api.md '| field | type | range | `gpupool submit` | meaning |')
tap_ok "docs/api.md's field table is the list's" same_lines "$doc" "$("$fields" table)"

form=$(sed -n '/pages.submit = /,/^  };/p' src/daemon/console/console.js |
    sed -n "s/^ *\['\([a-z_]*\)', '[^']*', el('[a-z]*', { id: 'f-\([a-z_]*\)'.*/\1 \2/p")
tap_ok "the console's submit form has fields" test -n "$form"
tap_ok "each form field's input is f-<its name>" \
    sh -c "printf '%s\n' \"\$1\" | awk '\$1 != \$2 { exit 1 }'" - "$form"
tap_ok "the console's form sends only the list's names" \
    within "$(printf '%s\n' "$form" | cut -d' ' -f1)" "$names"

help=$("$build/gpupool" help submit | grep -oE -- '--[a-z][a-z-]*' | grep -vx -- '--json' | sort -u)
tap_ok "gpupool help submit offers the list's flags" same_lines "$help" "$flags"

completion=$(sed -n 's/^ *local submit="\(.*\)"$/\1/p' contrib/gpupool.bash-completion |
    tr ' ' '\n' | grep -vx -e '--json' -e '--' | sort -u)
tap_ok "the shell completion offers the list's flags" same_lines "$completion" "$flags"

man=$(grep '^\.B submit ' contrib/gpupool.1 | sed 's/\\-/-/g' | grep -oE -- '--[a-z][a-z-]*' | sort -u)
tap_ok "the man page's submit names only the list's flags" within "$man" "$flags"
cli_md=$(sed -n '/gpupool submit/,/-- CMD/p' docs/cli.md | head -3 | grep -oE -- '--[a-z][a-z-]*' | sort -u)
tap_ok "docs/cli.md's submit names only the list's flags" within "$cli_md" "$flags"
tap_done
