#!/bin/sh
# A slice's ledger (the books its processes share its memory cap through) is
# the executor's: as root, with cgroups and mount namespaces, the executor
# makes each task's ledger before the task starts, in a directory only root
# may enter, and binds it into the task's own mount namespace; the
# interposer uses that one and never makes one. So a task of the same Unix
# user, who can compute every ledger's name, can neither open another
# running task's ledger nor make a later task's ledger first, nor make a user
# namespace in which to mount over them. Runs the fake driver through the
# daemon as a test user made here.
. tests/lib/tap.sh
. tests/daemon/lib.sh

slice_user gptl
D=$TMP/pool
slice_pool "$D" --period 300ms --poll 200ms \
    --executor-config "interposer=$TMP/lib/libgpuslice.so,emulate=$D/emulated-gpus.conf"
inst=$(cat "$D/tasks/instance")
loop=$TMP/lib/share-loop
submit() { # submit SCRIPT: a 0.25 slice of an emulated 80 GiB GPU (20 GiB)
    GPUPOOL_TOKEN=$T $GP submit --project proj --gpu 0.25 --workdir "$TMP/home-$U" \
        --env "LD_LIBRARY_PATH=$TMP/lib" -- sh -c "$1" | grep -o '[0-9][0-9]*' | head -1
}
logs_have() { $GP logs "$1" | grep -q "$2"; }

A=$(submit "$loop alloc 1024; echo holding; exec sleep 300")
tap_ok "a task of the user holds GPU memory" wait_until 30 logs_have "$A" "^holding"
tap_is "its allocation went through its slice" "$($GP logs "$A" | sed -n 's/^alloc=//p')" ok
tap_ok "its ledger is the executor's, in root's directory" \
    sh -c "ls /run/gpupool/ledgers | grep -q '^$inst\.'"

# Another task of the same user, which knows every ledger's name: the next
# two workloads will be $((A + 2)) and $((A + 3)).
n1=$((A + 2))
n2=$((A + 3))
P=$(submit "
ls /dev/shm | grep -c '^gpupool-slice-$inst-w$A-' | sed 's/^/byname=/'
cat /dev/shm/gpupool-slice-$inst-w$A-t0-a1 >/dev/null 2>&1 && echo open:shm || echo denied:shm
ls /run/gpupool/ledgers >/dev/null 2>&1 && echo list:dir || echo denied:dir
cat /run/gpupool/ledgers/* >/dev/null 2>&1 && echo open:dir || echo denied:dir
for w in $n1 $n2; do
  head -c 20000 /dev/zero >/dev/shm/gpupool-slice-$inst-w\$w-t0-a1 && echo made:shm
  touch /run/gpupool/ledgers/x 2>/dev/null && echo made:dir || echo denied:made
done
unshare -Ur true 2>/dev/null && echo userns:made || echo userns:denied
echo probed")
tap_ok "the probing task ran" wait_until 30 logs_have "$P" "^probed"
out=$($GP logs "$P")
tap_ok "no ledger of the running task has a name to open" contains "$out" "byname=0"
tap_ok "so none is opened by its name" contains "$out" "denied:shm"
tap_ok "root's ledger directory cannot be listed" sh -c "echo '$out' | grep -q 'denied:dir' && ! echo '$out' | grep -q 'list:dir\|open:dir'"
tap_ok "nor written" sh -c "! echo '$out' | grep -q 'made:dir'"
tap_ok "files under later tasks' ledger names can be made" contains "$out" "made:shm"
# Nor can it make a user namespace of its own, inside which it could mount
# files of its own, looking like root's, over the slice's.
if su "$U" -s /bin/sh -c 'unshare -Ur true' 2>/dev/null; then
    tap_ok "no user namespace of its own, although the host allows them" \
        contains "$out" "userns:denied"
else
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - # SKIP unprivileged user namespaces are off on this host"
fi

# The later tasks, whose ledger names were taken first, still get their
# slice: their ledgers are the executor's, and what was made under their
# names is never read.
C1=$(submit "exec $loop alloc 10240")
C2=$(submit "exec $loop alloc 30720")
tap_is "workload ids as predicted" "$C1 $C2" "$n1 $n2"
tap_ok "the first later task ran" wait_until 30 logs_have "$C1" "^alloc="
tap_ok "the second later task ran" wait_until 30 logs_have "$C2" "^alloc="
tap_is "10 GiB fits the 20 GiB slice" "$($GP logs "$C1" | sed -n 's/^alloc=//p')" ok
tap_is "30 GiB does not" "$($GP logs "$C2" | sed -n 's/^alloc=//p')" oom
rm -f /dev/shm/gpupool-slice-$inst-w$n1-t0-a1 /dev/shm/gpupool-slice-$inst-w$n2-t0-a1

$GP delete "$A" >/dev/null 2>&1
gone() { [ "$(ls /run/gpupool/ledgers | grep -c "^$inst\.")" = 0 ]; }
tap_ok "the ledgers go when their tasks are reaped" wait_until 30 gone
tap_done
