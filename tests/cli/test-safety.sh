#!/bin/sh
# The CLI against a hostile server and a hostile directory: strings from the
# server reach the terminal as visible escapes, never as control characters;
# an address file in ./gpupool-data is trusted only when the directory and
# the files are the user's own, and only together with the admin token
# beside it. The server is tests/cli/fake-server.pl, which answers every
# request with one prepared answer and records what it was sent.
. tests/lib/tap.sh
B=${GP_BUILD:-build}
case $B in /*) GP=$B/gpupool ;; *) GP=$PWD/$B/gpupool ;; esac
TMP=$(mktemp -d /tmp/gpupool-cli.XXXXXX)
SRV_PID=
trap '[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
unset GPUPOOL_SERVER GPUPOOL_TOKEN GPUPOOL_TOKEN_FILE
export HOME=$TMP/home XDG_CONFIG_HOME=$TMP/home/.config

# contains TEXT PATTERN: succeeds if TEXT matches the grep PATTERN.
contains() { printf '%s\n' "$1" | grep -q -- "$2"; }

# answer BODY [STATUS]: the fake server's next answers carry this JSON body
# (status 200 unless given).
answer() {
    printf 'HTTP/1.1 %s X\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
        "${2:-200}" "$(printf '%s' "$1" | wc -c)" "$1" >"$TMP/answer"
}
answer '{"workloads":[]}'
perl tests/cli/fake-server.pl "$TMP/answer" "$TMP/port" "$TMP/requests" &
SRV_PID=$!
n=0
while [ ! -s "$TMP/port" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
URL=http://127.0.0.1:$(cat "$TMP/port")

# A name with an escape sequence (red, clear screen, window title) and a
# newline that would forge a second row.
evil='\u001b[31mRED\u001b[2J\u001b]0;owned\u0007\nforged  p  u  running\u009b31m'
wl='{"id":7,"name":"'$evil'","project":"p","user":"u","state":"running","request":"1 GPU","submitted_ms":0,"reason":"'$evil'"}'
answer '{"workloads":['"$wl"']}'
out=$("$GP" --server "$URL" --token t list 2>&1)
tap_ok "list exits 0" [ $? = 0 ]
tap_is "list prints no control character" "$(printf '%s' "$out" | tr -d '\n' | LC_ALL=C grep -c "$(printf '[\001-\037\177]')")" 0
tap_is "list prints one header and one row" "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 2
tap_ok "the escape is shown as text" contains "$out" '\\x1b\[31mRED'
tap_ok "the newline is shown as text" contains "$out" 'RED.*\\nforged'
tap_ok "a C1 control is shown as text" contains "$out" '\\xc2\\x9b31m'
answer "$wl"
out=$("$GP" --server "$URL" --token t describe 7 2>&1)
tap_is "describe prints no control character" "$(printf '%s' "$out" | tr -d '\n' | LC_ALL=C grep -c "$(printf '[\001-\037\177]')")" 0
answer '{"error":{"message":"bad \u001b[2J\u001b]0;x\u0007"}}' 400
out=$("$GP" --server "$URL" --token t list 2>&1)
tap_is "an error message prints no control character" "$(printf '%s' "$out" | tr -d '\n' | LC_ALL=C grep -c "$(printf '[\001-\037\177]')")" 0
# run -it and attach (to any workload one may see) wait for it to run, and
# say why it ended if it ended first: the reason, which can hold the command
# its owner submitted, was printed as it came.
failed='{"id":7,"name":"x","project":"p","user":"u","state":"failed","reason":"'$evil'"}'
answer "$failed"
out=$("$GP" --server "$URL" --token t run -it --project p -- true 2>&1)
tap_is "run -it prints a failed workload's reason with no control character" "$(printf '%s' "$out" | tr -d '\n' | LC_ALL=C grep -c "$(printf '[\001-\037\177]')")" 0
tap_ok "and shows it as text" contains "$out" 'is failed: \\x1b\[31mRED'

# A workload's output, read by someone else (the project's other members, an
# admin) with gpupool logs: on a terminal it once wrote the clipboard (OSC
# 52), cleared the screen and set the window title. Colours, tabs and line
# ends pass; piped, the output is the task's, byte for byte.
printf '\033[31mRED\033[0m \033]52;c;cHduZWQ=\007\033[2J\033]0;owned\007 a\tb\302\233x \342\202\254\n' >"$TMP/log"
printf 'HTTP/1.1 200 X\r\nContent-Type: text/plain\r\nContent-Length: %s\r\nConnection: close\r\n\r\n' \
    "$(wc -c <"$TMP/log" | tr -d ' ')" >"$TMP/answer"
cat "$TMP/log" >>"$TMP/answer"
if script -qec true /dev/null >/dev/null 2>&1; then
    script -qec "$GP --server $URL --token t logs 7" /dev/null >"$TMP/tty-out" 2>&1
    tr -d '\r' <"$TMP/tty-out" >"$TMP/tty"
    tap_is "logs on a terminal: no escape byte but the colours' two" "$(tr -cd '\033' <"$TMP/tty" | wc -c | tr -d ' ')" 2
    tap_is "no BEL, no C1 control" "$(LC_ALL=C tr -cd '\007\233' <"$TMP/tty" | wc -c | tr -d ' ')" 0
    tap_ok "the clipboard, clear and title sequences are shown as text" \
        contains "$(cat "$TMP/tty")" '\\x1b\]52;c;cHduZWQ=\\x07\\x1b\[2J\\x1b\]0;owned\\x07'
    tap_ok "colours, a tab and UTF-8 text are kept" \
        contains "$(cat "$TMP/tty")" "$(printf '\033\\[31mRED\033\\[0m .*a\tb\\\\xc2\\\\x9bx \342\202\254')"
else
    tap_skip "no script(1) to give gpupool logs a terminal"
    tap_skip "no script(1)"
    tap_skip "no script(1)"
    tap_skip "no script(1)"
fi
"$GP" --server "$URL" --token t logs 7 >"$TMP/piped" 2>&1
tap_ok "logs piped are the task's output, byte for byte" cmp -s "$TMP/log" "$TMP/piped"

# --json on a terminal: JSON escapes the C0 controls, but wrote a C1 control
# of a name (here CSI, U+009B) as its UTF-8 bytes, which a terminal may take
# for the control. Piped, the JSON is as it was.
answer '{"workloads":['"$wl"']}'
if script -qec true /dev/null >/dev/null 2>&1; then
    script -qec "$GP --server $URL --token t --json list" /dev/null >"$TMP/tty-json" 2>&1
    tap_is "--json on a terminal writes no C1 control" "$(LC_ALL=C tr -cd '\233' <"$TMP/tty-json" | wc -c | tr -d ' ')" 0
    tap_ok "but its escape: the same JSON" grep -q 'running\\u009[bB]31m' "$TMP/tty-json"
else
    tap_skip "no script(1) to give gpupool --json a terminal"
    tap_skip "no script(1)"
fi
"$GP" --server "$URL" --token t --json list >"$TMP/piped-json" 2>&1
tap_ok "--json piped keeps UTF-8 as it is" grep -q "running$(printf '\302\233')31m" "$TMP/piped-json"

# A directory where others may write: its address file must not get the token.
answer '{"workloads":[]}'
mkdir -p "$TMP/shared/gpupool-data"
echo "$URL" >"$TMP/shared/gpupool-data/gpupoold.addr"
echo gp_secret_admin >"$TMP/shared/gpupool-data/admin.token"
chmod 600 "$TMP/shared/gpupool-data/admin.token" "$TMP/shared/gpupool-data/gpupoold.addr"
chmod 777 "$TMP/shared/gpupool-data"
: >"$TMP/requests"
out=$(cd "$TMP/shared" && GPUPOOL_TOKEN=gp_my_own_token "$GP" list 2>&1)
tap_is "a token of one's own is not sent to the address in ./gpupool-data" "$(grep -c gp_my_own "$TMP/requests")" 0
out=$(cd "$TMP/shared" && "$GP" list 2>&1)
tap_is "a directory others may write is not trusted" "$(grep -c 'Authorization' "$TMP/requests")" 0
tap_ok "and the CLI says why" contains "$out" 'ignoring ./gpupool-data/gpupoold.addr'
chmod 755 "$TMP/shared/gpupool-data"
chmod 666 "$TMP/shared/gpupool-data/gpupoold.addr"
out=$(cd "$TMP/shared" && "$GP" list 2>&1)
tap_is "an address file others may write is not trusted" "$(grep -c 'Authorization' "$TMP/requests")" 0
chmod 644 "$TMP/shared/gpupool-data/gpupoold.addr"
out=$(cd "$TMP/shared" && "$GP" list 2>&1)
tap_is "one's own private daemon directory is used, with its admin token" \
    "$(grep -c 'Authorization: Bearer gp_secret_admin' "$TMP/requests")" 1
# A token of one's own beside a daemon started with its defaults: the address
# file is not used with it, and when the default address does not answer the
# CLI says why and what to set.
if curl -s -o /dev/null --max-time 2 http://127.0.0.1:8642/; then
    tap_skip "something answers on the default address 127.0.0.1:8642"
else
    out=$(cd "$TMP/shared" && GPUPOOL_TOKEN=gp_my_own_token "$GP" list 2>&1)
    tap_ok "unreachable default: the CLI says why ./gpupool-data/gpupoold.addr was not used" \
        contains "$out" "gpupoold.addr ($URL) is used only with the admin token beside it, and a token is set (GPUPOOL_TOKEN)"
    tap_ok "and suggests GPUPOOL_SERVER" contains "$out" "export GPUPOOL_SERVER=$URL"
fi
out=$(GPUPOOL_SERVER=http://127.0.0.1:1 GPUPOOL_TOKEN=t "$GP" list 2>&1)
tap_ok "an unreachable server: the CLI says where it was set" contains "$out" "http://127.0.0.1:1 was taken from GPUPOOL_SERVER"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    chown nobody "$TMP/shared/gpupool-data/gpupoold.addr"
    : >"$TMP/requests"
    out=$(cd "$TMP/shared" && "$GP" list 2>&1)
    tap_is "an address file owned by another user is not trusted" "$(grep -c 'Authorization' "$TMP/requests")" 0
fi
tap_done
