#!/bin/sh
# test-completion.sh — contrib/gpupool.bash-completion offers what gpupool
# takes, as its help says and as the daemon names things: every command of
# the CLI's table, each command's flags and subcommands from its help, and the
# values of --state, --role, --kind, --by and --on-preempt from the daemon's
# lists (enum-names). The script had drifted: it offered none of run, attach,
# exec, port-forward, notebook and export, neither list's --sort and --cursor
# nor token's --unix-user, and no state paused. The man page and
# docs/cli.md must name every command too (the man page lacked six).
set -u
build=${GP_BUILD:-build}
. tests/lib/tap.sh
comp=contrib/gpupool.bash-completion
names=$build/tests/daemon/enum-names
GP=$build/gpupool

lines() { tr ' ' '\n' | grep -v '^$' | sort -u; }

# offered LABEL: the words the script offers under the case label LABEL (a
# command, or the flag whose value is completed), $submit expanded.
submit_words=$(sed -n 's/^ *local submit="\(.*\)"$/\1/p' "$comp")
offered() {
    awk -v l="$1" '{ s = $0; sub(/^ */, "", s); i = index(s, ")");
        if (i == 0) next; n = split(substr(s, 1, i - 1), labels, "|");
        for (k = 1; k <= n; k++) if (labels[k] == l) { print; exit } }' "$comp" |
        sed -n 's/.*compgen -W "\([^"]*\)".*/\1/p' | sed "s/\$submit/$submit_words/" | lines
}

# help_flags CMD: the flags of gpupool help CMD: every flag of its usage lines,
# and on its option lines those that start an option (after two blanks),
# not those its sentences name.
help_flags() {
    "$GP" help "$1" | awk '
        /^usage:/ { u = 1 }
        u && !/^usage:/ && !/^ +(gpupool|\[)/ { u = 0 }
        u { print; next }
        /^ +-/ { gsub(/[^ ] -/, "x x"); print }
    ' | grep -oE -- '(^|[ [|])--?[a-z][a-z-]*' | sed 's/^[ [|]//' | sort -u
}

# The commands: the CLI's table (src/cli/main.c), its help, the script.
table=$(grep -oE '\{"[a-z-]+", cmd_' src/cli/main.c | sed 's/{"\([a-z-]*\)".*/\1/' | sort -u)
tap_ok "the CLI has a command table" test -n "$table"
helped=$("$GP" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' | sort -u)
tap_ok "gpupool --help names every command but the alias ls, and help" \
    same_lines "$helped" "$(printf '%s\nhelp\n' "$table" | grep -vx ls | sort -u)"
top=$(offered '""' | grep -v '^-')
tap_ok "the script offers every command, and help" same_lines "$top" "$(printf '%s\nhelp\n' "$table" | sort -u)"
tap_ok "help is offered every command's help" same_lines "$(offered help)" \
    "$(printf '%s\nconfig\nexit-codes\n' "$table" | grep -vx ls | sort -u)"

# The man page and docs/cli.md's summary name every command.
man=$(sed -n '/^\.SH COMMANDS/,/^\.SH ENVIRONMENT/p' contrib/gpupool.1 | sed -n 's/^\.B //p' |
    sed 's/\\-/-/g; s/\[[^]]*\]//g' | tr ',|' '\n\n' | sed -n 's/^ *\([a-z][a-z-]*\).*/\1/p')
missing=""
for c in $(printf '%s\n' "$table" | grep -vx ls); do
    printf '%s\n' "$man" | grep -qxF "$c" || missing="$missing $c"
done
tap_is "contrib/gpupool.1 names every command" "$missing" ""
missing=""
for c in $(printf '%s\n' "$table" | grep -vx ls); do
    grep -q "^    gpupool $c\b\|^    gpupool [a-z|]*\b$c\b" docs/cli.md || missing="$missing $c"
done
tap_is "docs/cli.md's summary names every command" "$missing" ""

# Each command's flags: all that its help names, and no other but --json
# and -- (and submit's, for run and notebook, which take a submission's).
submit_flags=$(help_flags submit)
for c in $(printf '%s\n' "$table" | grep -vx ls); do
    has=$(offered "$c" | grep '^-')
    want=$(help_flags "$c")
    extra="--json --"
    "$GP" help "$c" | grep -q "REQUEST\|submit's options" && extra="$extra $submit_flags"
    missing="" other=""
    for f in $want; do
        printf '%s\n' "$has" | grep -qxF -- "$f" || missing="$missing $f"
    done
    for f in $has; do
        printf '%s\n%s\n' "$want" "$extra" | tr ' ' '\n' | grep -qxF -- "$f" || other="$other $f"
    done
    tap_is "gpupool $c: the script offers every flag its help names" "$missing" ""
    tap_is "gpupool $c: the script offers no flag it does not take" "$other" ""
done

# Subcommands: the words after "gpupool CMD" on the help's usage lines.
for c in queue node token export; do
    subs=$("$GP" help "$c" | sed -n "s/^\(usage:\)\{0,1\} *gpupool $c \([a-z][a-z-]*\).*/\2/p" | sort -u)
    tap_ok "gpupool $c: the script offers its subcommands" \
        same_lines "$(offered "$c" | grep -v '^-')" "$subs"
done

# Values, from the daemon's lists.
tap_ok "--state: every state, and active" same_lines "$(offered --state)" \
    "$( (printf 'active\n'; "$names" states) | sort -u)"
tap_ok "--role: every role a token may have" same_lines "$(offered --role)" "$("$names" roles | sort -u)"
tap_ok "--kind: every kind" same_lines "$(offered --kind)" "$("$names" kinds | sort -u)"
tap_ok "--by: every grouping of usage" same_lines "$(offered --by)" "$("$names" usage-by | sort -u)"
modes=$(sed -n 's/^ *local modes="\(.*\)"$/\1/p' "$comp" | lines)
tap_ok "--on-preempt: every eviction mode" same_lines "$modes" "$("$names" on-preempt | sort -u)"
tap_done
