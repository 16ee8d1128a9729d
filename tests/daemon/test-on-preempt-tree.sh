#!/bin/sh
# A queue's on_preempt is inherited down the queue tree: a queue that sets
# none takes its parent's, and a top-level queue that sets none the default,
# checkpoint. A queue shows its own setting (on_preempt_own, null when it
# inherits), the mode in force (on_preempt) and where that comes from
# (on_preempt_from). on_preempt null in a PATCH (gpupool queue set
# --on-preempt inherit) goes back to inheriting. A submission that gives no
# mode stores the one in force at submission, which later changes never
# touch. All of it survives a restart, and store migration 11 keeps every
# project's mode of an older store while letting the defaults inherit.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts" gpd_start "$D" --period 300ms --poll 200ms

# field JSON NAME: the value of the first "NAME": in JSON, as written.
field() {
    printf '%s\n' "$1" | sed -n "s/.*\"$2\":\(\"[^\"]*\"\|null\).*/\1/p" | head -1
}
# modes QUEUE: the queue's "on_preempt own from".
modes() {
    q=$(api GET "/api/v1/queues/$1")
    echo "$(field "$q" on_preempt) $(field "$q" on_preempt_own) $(field "$q" on_preempt_from)"
}
# submit PROJECT: submits a workload that gives no mode; prints its id.
submit() {
    api POST /api/v1/workloads "{\"project\":\"$1\",\"command\":[\"sleep\",\"600\"]}" |
        sed -n 's/^{"id":\([0-9]*\).*/\1/p'
}
# mode_of ID: the mode stored in the workload's request.
mode_of() {
    field "$(api GET "/api/v1/workloads/$1")" on_preempt
}

tap_ok "a department D with projects d1, d2 and a department E with e1" sh -c "
    $GP queue create D --deserved 4 >/dev/null && $GP queue create d1 --parent D >/dev/null &&
    $GP queue create d2 --parent D >/dev/null && $GP queue create E >/dev/null &&
    $GP queue create e1 --parent E >/dev/null"
tap_is "a project that set nothing has the default, checkpoint" "$(modes d1)" \
    '"checkpoint" null null'
tap_ok "a department takes on_preempt pause" \
    contains "$(api PATCH /api/v1/queues/D '{"on_preempt":"pause"}')" ' 200$'
tap_is "the department shows it as its own" "$(modes D)" '"pause" "pause" "D"'
tap_is "its project inherits it, and says from where" "$(modes d1)" '"pause" null "D"'
tap_is "another department's project does not" "$(modes e1)" '"checkpoint" null null'

w1=$(submit d1)
tap_is "a submission to the project takes its department's mode" "$(mode_of "$w1")" '"pause"'
tap_is "one to the other department's project the default" "$(mode_of "$(submit e1)")" \
    '"checkpoint"'

tap_ok "gpupool queue set d2 --on-preempt checkpoint" $GP queue set d2 --on-preempt checkpoint
tap_is "the project's own setting wins over its department's" "$(modes d2)" \
    '"checkpoint" "checkpoint" "d2"'
w2=$(submit d2)
tap_is "and a submission to it takes the project's" "$(mode_of "$w2")" '"checkpoint"'

out=$(api PATCH /api/v1/queues/D '{"on_preempt":"freeze"}')
tap_ok "an unknown mode for a department is refused, naming the field" \
    contains "$out" '"field":"on_preempt".* 400$'
tap_is "and changes nothing" "$(modes D) $(modes d1)" '"pause" "pause" "D" "pause" null "D"'

tap_ok "the department's mode changes to requeue" $GP queue set D --on-preempt requeue
tap_is "its inheriting project follows" "$(modes d1)" '"requeue" null "D"'
tap_is "an accepted workload keeps the mode it was submitted with" "$(mode_of "$w1")" '"pause"'
w3=$(submit d1)
tap_is "a new one takes the new mode" "$(mode_of "$w3")" '"requeue"'

tap_ok "on_preempt null goes back to inheriting" \
    contains "$(api PATCH /api/v1/queues/d2 '{"on_preempt":null}')" '"on_preempt_own":null.* 200$'
tap_is "the project takes its department's again" "$(modes d2)" '"requeue" null "D"'
tap_is "its accepted workload keeps its mode" "$(mode_of "$w2")" '"checkpoint"'
tap_ok "gpupool queue set --on-preempt inherit" $GP queue set D --on-preempt inherit
tap_is "the department inherits the default" "$(modes D) $(modes d1)" \
    '"checkpoint" null null "checkpoint" null null'
$GP queue set D --on-preempt sleep >/dev/null 2>&1
tap_is "gpupool queue set refuses an unknown mode (usage)" "$?" 2
$GP queue set D --on-preempt requeue >/dev/null
$GP queue set e1 --on-preempt pause >/dev/null
list=$($GP queue list)
tap_ok "queue list shows a queue's own mode" contains "$list" '^ *e1 .* pause$'
tap_ok "an inherited one with where it comes from" contains "$list" '^ *d1 .* requeue (from D)$'
tap_ok "and the default as the default" contains "$list" '^E .* checkpoint (default)$'

gpd_stop
tap_ok "gpupoold restarts on the same store" gpd_start "$D" --period 300ms --poll 200ms
tap_is "the settings survived the restart" "$(modes D) $(modes d1) $(modes d2) $(modes e1)" \
    '"requeue" "requeue" "D" "requeue" null "D" "requeue" null "D" "pause" "pause" "e1"'
tap_is "and the workloads' modes" "$(mode_of "$w1") $(mode_of "$w2") $(mode_of "$w3")" \
    '"pause" "checkpoint" "requeue"'

# A store from before migration 11, where every queue had a mode of its own
# (checkpoint by default) and a department's did nothing: D pause, d1 and E
# and e1 checkpoint, d2 requeue.
gpd_stop
sqlite3 "$D/gpupool.db" "UPDATE schema_version SET version=10;
    ALTER TABLE queues DROP COLUMN workloads_after;
    ALTER TABLE tasks DROP COLUMN master_port;
    UPDATE queues SET on_preempt='pause' WHERE name='D';
    UPDATE queues SET on_preempt='checkpoint' WHERE name IN ('d1','E','e1');
    UPDATE queues SET on_preempt='requeue' WHERE name='d2';"
tap_ok "gpupoold migrates a store of schema version 10" gpd_start "$D" --period 300ms --poll 200ms
tap_is "the store is at version 13" "$(sqlite3 "$D/gpupool.db" 'SELECT version FROM schema_version')" 13
tap_is "a project at checkpoint under a department at pause keeps checkpoint, its own" \
    "$(modes d1)" '"checkpoint" "checkpoint" "d1"'
tap_is "a project with its own mode keeps it" "$(modes d2)" '"requeue" "requeue" "d2"'
tap_is "the department keeps its own" "$(modes D)" '"pause" "pause" "D"'
tap_is "queues at the default with no other mode above now inherit it" "$(modes E) $(modes e1)" \
    '"checkpoint" null null "checkpoint" null null'
tap_ok "so the department's later setting reaches its project" $GP queue set E --on-preempt pause
tap_is "and a submission to it" "$(mode_of "$(submit e1)")" '"pause"'
tap_is "accepted workloads keep their modes" "$(mode_of "$w1") $(mode_of "$w2") $(mode_of "$w3")" \
    '"pause" "checkpoint" "requeue"'

# A request stored before the mode existed holds none, and the scheduler
# reads it as checkpoint: the API's spec says so, and describe and the
# console show what the API says (they had each written that default).
gpd_stop
sqlite3 "$D/gpupool.db" "UPDATE workloads SET spec = json_remove(spec, '\$.on_preempt') WHERE id = $w3"
tap_ok "gpupoold restarts on a request stored without a mode" gpd_start "$D" --period 300ms --poll 200ms
tap_is "the API's spec gives the mode it is read with" "$(mode_of "$w3")" '"checkpoint"'
tap_ok "and describe shows it" sh -c "$GP describe $w3 | grep -q '^On preempt: *checkpoint$'"
tap_done
