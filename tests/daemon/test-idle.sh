#!/bin/sh
# Idle GPUs handed back (docs/usage.md, "Idle sessions"): a project's
# --idle-gpu-timeout and --max-session-length, on a fake NVML whose GPU 0 is
# idle and GPU 1 busy. A session on the busy GPU keeps running; one on the
# idle GPU is told so on its terminal, suspended with an event saying "idle",
# and its GPU runs another workload; another user cannot resume it; its
# owner's resume, then `gpupool attach`, bring it back; the GPU-hours it
# returned are counted for its project. Bad values are refused naming the
# field. That node has no cgroup freezer, so the event says why the session
# was not paused; a second daemon with the freezer pauses an idle shell
# instead, keeps it paused until its owner attaches, and attach resumes the
# same shell with its variable still set; the host memory a paused session
# holds (its GPU's and what it asked for) is counted on its node, again
# after a restart that cannot read the workload back. Waits on conditions
# only.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/idle
mkdir -p "$D"
GPUPOOL_FAKE_GPUS=2 GPUPOOL_FAKE_BUSY=0,50
export GPUPOOL_FAKE_GPUS GPUPOOL_FAKE_BUSY
CFG="state_dir=$D/tasks,nvml=$B/fake/libnvidia-ml.so.1,interposer=$TMP/none.so,cgroup=off"
tap_ok "gpupoold starts on a fake NVML (GPU 0 idle, GPU 1 busy)" gpd_start "$D" --period 200ms \
    --poll 200ms --usage-period 200ms --executor-config "$CFG"
$GP queue create dept --deserved 2 >/dev/null && $GP queue create proj --parent dept --deserved 2 >/dev/null

# ---- Bad values, refused naming the field, changing nothing ----
out=$($GP queue set proj --idle-gpu-timeout 5s 2>&1)
tap_is "an idle timeout under 10s is refused before sending, naming the flag" \
    "$?:$(printf '%s' "$out" | grep -c -- '--idle-gpu-timeout: 5s is outside 10s to 365d')" "2:1"
tap_ok "and by the API, naming the field" \
    contains "$(api PATCH /api/v1/queues/proj '{"idle_gpu_timeout":"5s"}')" 'idle_gpu_timeout: 5s is outside 10s to 365d.* 400$'
out=$($GP queue set proj --max-session-length soon 2>&1)
tap_is "a malformed --max-session-length is refused, naming the flag" \
    "$?:$(printf '%s' "$out" | grep -c -- '--max-session-length: "soon"')" "2:1"
tap_ok "the API refuses a malformed idle_gpu_timeout, naming it" \
    contains "$(api PATCH /api/v1/queues/proj '{"idle_gpu_timeout":"later"}')" '"field":"idle_gpu_timeout".* 400$'
tap_ok "and a negative max_session_length" \
    contains "$(api PATCH /api/v1/queues/proj '{"max_session_length":-5}')" '"field":"max_session_length".* 400$'
tap_ok "and one above 365 days" \
    contains "$(api PATCH /api/v1/queues/proj '{"max_session_length":"400d"}')" '"field":"max_session_length".* 400$'
bounds_are() { # IDLE MAX: the project's bounds as the queue API gives them
    q=$(api GET /api/v1/queues/proj)
    contains "$q" "\"idle_gpu_timeout\":$1[,}]" && contains "$q" "\"max_session_length\":$2[,}]"
}
tap_ok "nothing changed: no bound is set" bounds_are null null

# attach.py GP ID FIRST TYPED WANTED: attaches on a terminal, types TYPED
# once the replay shows FIRST, waits for WANTED (\r and \n written as such),
# detaches, and prints what it read, then ATTACHED if WANTED came.
cat >"$TMP/attach.py" <<'PY'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "attach", sys.argv[2]])
buf, end = b"", time.time() + 120
def until(needle):
    global buf
    while needle not in buf and time.time() < end:
        if select.select([fd], [], [], 0.5)[0]:
            try:
                d = os.read(fd, 65536)
            except OSError:
                break
            if not d:
                break
            buf += d
    return needle in buf
got = until(sys.argv[3].encode())
if got:
    os.write(fd, sys.argv[4].encode() + b"\r")
    got = until(sys.argv[5].encode().decode("unicode_escape").encode())
os.write(fd, b"\x10\x11")  # Ctrl-P Ctrl-Q: detach
until(b"detached")
os.waitpid(pid, 0)
sys.stdout.write(buf.decode("utf-8", "replace"))
print("\nATTACHED" if got else "\nNOT ATTACHED")
PY

# ---- Two sessions: the first on GPU 0 (idle), the second on GPU 1 (busy) ----
session() { # NAME: submits an interactive workload with a terminal, prints its id
    api POST /api/v1/workloads "{\"project\":\"proj\",\"name\":\"$1\",\"gpu\":1,\"tty\":true,\
\"grace\":\"1s\",\"command\":[\"sh\",\"-c\",\"echo $1 started; exec cat\"]}" | sed -n 's/.*"id":\([0-9]*\).*/\1/p'
}
state_of() { api GET "/api/v1/workloads/$1" | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p'; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }
gpu_of() { api GET "/api/v1/workloads/$1" | sed -n 's/.*"slices":\[\[\([0-9]*\),.*/\1/p'; }
IDLE=$(session idle)
tap_ok "a session runs" wait_until 60 is_state "$IDLE" running
BUSY=$(session busy)
tap_ok "a second session runs" wait_until 60 is_state "$BUSY" running
tap_is "they hold GPU 0 (idle) and GPU 1 (busy)" "$(gpu_of "$IDLE") $(gpu_of "$BUSY")" "0 1"

tap_ok "the project takes a 10s idle GPU timeout" $GP queue set proj --idle-gpu-timeout 10s
tap_ok "the queue shows it in seconds" bounds_are 10 null
tap_ok "the idle session is suspended" wait_until 90 is_state "$IDLE" suspended
ev=$(api GET "/api/v1/workloads/$IDLE/events")
tap_ok "an event says it was idle" contains "$ev" 'GPUs were idle for [0-9.]*s'
tap_ok "the event says the command restarts on resume" contains "$ev" 'command restarts from the beginning'
tap_ok "and why it was not paused (this node has no cgroup freezer)" \
    contains "$ev" 'not paused: pause is not supported on this node: tasks get no cgroup freezer'
tap_ok "describe gives the reason" contains "$($GP describe "$IDLE")" 'suspended: its GPUs were idle'
tap_ok "list shows it suspended" contains "$($GP list --state suspended)" "^ *$IDLE .*suspended"
tap_ok "its terminal was told why and how to come back" \
    contains "$(api GET "/api/v1/workloads/$IDLE/logs")" \
    "gpupool attach $IDLE' or 'gpupool resume $IDLE' brings it back"
# The busy session started after the idle one: had it been judged idle, it
# would have been suspended by now.
tap_is "the busy session keeps running" "$(state_of "$BUSY")" running

# ---- Its GPU back in the pool ----
OTHER=$($GP submit --project proj --gpu 1 -- sleep 600 | grep -o '[0-9][0-9]*' | head -1)
tap_ok "another workload runs on the GPU it gave back" wait_until 60 is_state "$OTHER" running
tap_is "on GPU 0" "$(gpu_of "$OTHER")" 0

# ---- Only its owner (or an admin) brings it back ----
TB=$($GP token create --user other --role researcher --scope proj | head -1)
out=$(GPUPOOL_TOKEN=$TB $GP resume "$IDLE" 2>&1)
tap_is "another user cannot resume it" "$?:$(printf '%s' "$out" | grep -c 'belongs to')" "4:1"
out=$(GPUPOOL_TOKEN=$TB $GP attach "$IDLE" 2>&1 </dev/null)
tap_is "nor attach to it (which would resume it)" "$?:$(printf '%s' "$out" | grep -c 'only its owner')" "4:1"
tap_is "it stays suspended" "$(state_of "$IDLE")" suspended

# ---- The GPU-hours returned, per project ----
returned() { api GET '/api/v1/usage?by=queue&from=1h' | grep -q '"key":"proj"[^}]*"returned_gpu_hours":[0-9.]*[1-9]'; }
tap_ok "usage counts the GPU-hours the policy returned, for the project" wait_until 30 returned

# ---- Back by resume (queued until its project may run it) ----
tap_ok "its owner resumes it" $GP resume "$IDLE"
tap_ok "it waits while the GPU is taken" wait_until 30 is_state "$IDLE" pending
$GP delete "$OTHER" >/dev/null
tap_ok "it runs again once the GPU is free" wait_until 60 is_state "$IDLE" running
tap_ok "and is suspended again when idle" wait_until 90 is_state "$IDLE" suspended

# ---- Back by attach, on a terminal (no longer judged idle meanwhile) ----
$GP queue set proj --idle-gpu-timeout 1h >/dev/null
out=$(python3 "$TMP/attach.py" "$GP" "$IDLE" 'idle started' 'typed after attach' \
    'typed after attach\r\ntyped after attach' 2>&1)
tap_ok "attach says it resumes a suspended session" contains "$out" 'resuming it; its command starts again'
tap_ok "attach connects once it runs, and input reaches it" contains "$out" '^ATTACHED$'

# ---- The longest session ----
$GP queue set proj --idle-gpu-timeout none --max-session-length 10s >/dev/null
tap_ok "the busy session is suspended after max_session_length" wait_until 90 is_state "$BUSY" suspended
tap_ok "and the session attached to above" wait_until 90 is_state "$IDLE" suspended
tap_ok "its event names the reason" \
    contains "$(api GET "/api/v1/workloads/$BUSY/events")" "max_session_length"
tap_ok "the queue shows the bounds" bounds_are null 10

# ---- Deleted while the policy stops it ----
$GP queue set proj --idle-gpu-timeout 10s --max-session-length none >/dev/null
LONG=$(api POST /api/v1/workloads '{"project":"proj","gpu":1,"tty":true,"grace":"1h",
"command":["sh","-c","trap \"\" TERM; echo long started; exec cat"]}' | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
tap_ok "a session that ignores the checkpoint signal runs" wait_until 60 is_state "$LONG" running
tap_is "on the idle GPU" "$(gpu_of "$LONG")" 0
tap_ok "the policy starts to stop it when idle" wait_until 90 is_state "$LONG" stopping
$GP delete "$LONG" >/dev/null
tap_ok "deleted meanwhile, it is deleted" wait_until 30 is_state "$LONG" deleted
tap_ok "and its reason is its deletion, not the suspension" \
    contains "$(api GET "/api/v1/workloads/$LONG")" '"reason":"deleted by its owner"'
gpd_stop

# ---- Where the node can pause: paused, its processes kept ----
# The same fake NVML with the cgroup freezer and the fake CUDA driver: the
# idle session is paused instead of suspended, its GPU goes back to the
# pool, and attach resumes the same shell, its variable still set.
# GPUs of 1 GiB: a paused session holds that much host memory, which the
# node's default share has room for.
P=$TMP/idlepause
mkdir -p "$P"
GPUPOOL_FAKE_GPU_MEMORY=1073741824
export GPUPOOL_FAKE_GPU_MEMORY
CFG="state_dir=$P/tasks,nvml=$B/fake/libnvidia-ml.so.1,cuda=$B/fake/libcuda.so.1,interposer=$TMP/none.so"
tap_ok "a second gpupoold starts, with the cgroup freezer" gpd_start "$P" --period 200ms \
    --poll 200ms --usage-period 200ms --executor-config "$CFG"
skip_unless_pause "$P"
$GP queue create dept --deserved 2 >/dev/null && $GP queue create proj --parent dept --deserved 2 >/dev/null
SH=$(api POST /api/v1/workloads '{"project":"proj","name":"shell","gpu":1,"tty":true,"grace":"1s",
"command":["sh","-c","echo shell started; exec sh -i"]}' | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
tap_ok "a shell session runs" wait_until 60 is_state "$SH" running
tap_is "on the idle GPU" "$(gpu_of "$SH")" 0
out=$(python3 "$TMP/attach.py" "$GP" "$SH" 'shell started' 'KEPT=kept$((6*7)); echo "set $KEPT"' 'set kept42')
tap_ok "a shell variable is set in it" contains "$out" '^ATTACHED$'
$GP queue set proj --idle-gpu-timeout 10s >/dev/null
tap_ok "the idle session is paused" wait_until 90 is_state "$SH" paused ||
    api GET "/api/v1/workloads/$SH/events" | sed 's/^/# /'
ev=$(api GET "/api/v1/workloads/$SH/events")
tap_ok "an event paused" contains "$ev" '"kind":"paused"'
tap_ok "says it was idle, and how long each step took" \
    contains "$ev" 'paused: its GPUs were idle for [0-9.]*s.*freeze [0-9]* ms'
tap_ok "its terminal was told that its processes are kept" \
    contains "$(api GET "/api/v1/workloads/$SH/logs")" 'its processes are kept as they are'
tap_ok "describe shows it paused" contains "$($GP describe "$SH")" '^State: *paused$'
# The host memory it holds paused stays in its node's books (the engine had
# forgotten it with the workload: 0), so that pauses and placements there
# count on it; once it runs again, nothing is held so.
paused_memory() { api GET /api/v1/nodes | grep -o '"paused_memory": *[0-9]*' | head -1 | grep -o '[0-9]*$'; }
holds_gpu() { [ "$(paused_memory)" -ge 1073741824 ]; }
holds_none() { [ "$(paused_memory)" = 0 ]; }
tap_ok "its node counts the host memory it holds paused" holds_gpu ||
    api GET /api/v1/nodes | sed 's/^/# /'
OTHER=$($GP submit --project proj --gpu 2 -- sleep 600 | grep -o '[0-9][0-9]*' | head -1)
tap_ok "its GPU went back to the pool: a workload of both GPUs runs" wait_until 60 is_state "$OTHER" running
tap_ok "the GPU-hours it returned are counted" wait_until 30 returned
$GP delete "$OTHER" >/dev/null
wait_until 30 is_state "$OTHER" deleted
sleep 2 # ten scheduling periods with its GPU free
tap_is "the engine does not resume it by itself when its GPU is free" "$(state_of "$SH")" paused
# A restart of gpupoold finds it held by the idle policy still: not an
# ordinary paused workload, which the engine would resume at once.
gpd_stop
tap_ok "gpupoold restarts" gpd_start "$P" --period 200ms --poll 200ms --usage-period 200ms \
    --executor-config "$CFG"
tap_ok "it is paused after the restart" wait_until 30 is_state "$SH" paused
tap_ok "its node counts the host memory it holds paused again" wait_until 30 holds_gpu
sleep 2 # ten scheduling periods with its GPU free
tap_is "the engine does not resume it after the restart either" \
    "$(state_of "$SH") $(api GET "/api/v1/workloads/$SH/events" | grep -o '"kind":"resumed"' | wc -l)" "paused 0"
$GP queue set proj --idle-gpu-timeout 1h >/dev/null
out=$(python3 "$TMP/attach.py" "$GP" "$SH" 'shell started' 'echo "still $KEPT"' 'still kept42' 2>&1)
tap_ok "attach says it resumes it where it was" contains "$out" 'resuming it where it was'
tap_ok "attach resumes the same shell: its variable is still set" contains "$out" '^ATTACHED$'
tap_is "it runs" "$(state_of "$SH")" running
tap_ok "and its node holds nothing paused any more" wait_until 30 holds_none
ev=$(api GET "/api/v1/workloads/$SH/events")
tap_ok "an event says it resumed" contains "$ev" '"kind":"resumed"'
tap_ok "in its first attempt" contains "$(api GET "/api/v1/workloads/$SH")" '"attempt":1[,}]'
tap_is "nothing started its command again" "$(api GET "/api/v1/workloads/$SH/logs" | grep -c 'shell started')" 1
$GP delete "$SH" >/dev/null
tap_ok "deleted, it ends" wait_until 30 is_state "$SH" deleted
# A session paused so and deleted after a restart takes its row of returned
# GPUs with it, where the row stayed (nothing held it for the policy's after
# the restart) and usage counted its GPUs as returned at every sample.
$GP queue set proj --idle-gpu-timeout 10s >/dev/null
S2=$(api POST /api/v1/workloads '{"project":"proj","name":"shell2","gpu":1,"tty":true,"grace":"1s",
"command":["sh","-c","exec sh -i"]}' | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
tap_ok "a second shell session is paused when idle" wait_until 90 is_state "$S2" paused
rows() { sqlite3 "$P/gpupool.db" 'SELECT count(*) FROM idle_returns'; }
tap_is "a row of the GPUs it returned is stored" "$(rows)" 1
gpd_stop
tap_ok "gpupoold restarts" gpd_start "$P" --period 200ms --poll 200ms --usage-period 200ms \
    --executor-config "$CFG"
tap_ok "it is paused after the restart" wait_until 30 is_state "$S2" paused
$GP delete "$S2" >/dev/null
tap_ok "deleted, it ends" wait_until 30 is_state "$S2" deleted
tap_is "and its row of returned GPUs is gone" "$(rows)" 0
# A session paused so holds the node memory it asked for as well as its
# GPU's, and a restart counts both again from what the loop keeps of it,
# reading nothing that could fail: a read of its stored request that
# failed was once ignored, and the node counted its GPU's memory alone.
# (An interactive workload runs inside its project's deserved quota.)
$GP queue set dept --memory-deserved 1G >/dev/null && $GP queue set proj --memory-deserved 1G >/dev/null
S3=$(api POST /api/v1/workloads '{"project":"proj","name":"shell3","gpu":1,"memory":"512M",
"tty":true,"grace":"1s","command":["sh","-c","exec sh -i"]}' | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
tap_ok "a session asking for 512 MiB of memory is paused when idle" \
    wait_until 90 is_state "$S3" paused
tap_is "its node counts its GPU's memory and the memory it asked for" "$(paused_memory)" 1610612736
gpd_stop
# Every read of a workload by its id after the recovery's own fails
# (failstep.so, which a sanitizer build cannot preload).
by_id="SELECT id, name, project, user, state, attempt, submitted_ms, updated_ms, request,"
by_id="$by_id spec, reason, exit_code, stop_kind, stop_deadline_ms FROM workloads WHERE id"
case $B in
*asan* | *tsan*)
    tap_skip "failstep.so is not preloadable into a sanitizer build"
    tap_skip "failstep.so is not preloadable into a sanitizer build"
    ;;
*)
    GPD_TEST_FAIL_STEP=$by_id GPD_TEST_FAIL_STEP_NTH=2 LD_PRELOAD=$B/tests/daemon/failstep.so \
        tap_ok "gpupoold restarts, its reads of a workload failing after the first" \
        gpd_start "$P" --period 200ms --poll 200ms --usage-period 200ms --executor-config "$CFG"
    tap_is "its node counts both again" "$(paused_memory)" 1610612736
    gpd_stop
    ;;
esac
tap_ok "a normal start comes up" gpd_start "$P" --period 200ms --poll 200ms --usage-period 200ms \
    --executor-config "$CFG"
$GP delete "$S3" >/dev/null
tap_ok "deleted, it ends" wait_until 30 is_state "$S3" deleted
gpd_stop
tap_done
