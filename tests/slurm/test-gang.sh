#!/bin/sh
# A gang of two 4-GPU tasks on a real Slurm cluster: gpupool places them on
# two nodes at once, Slurm runs one job per task, submitted held and
# released together in one call (all or nothing), and each task gets the
# rendezvous of a distributed trainer (WORLD_SIZE, RANK, MASTER_ADDR,
# MASTER_PORT) next to Slurm's own variables; rank 1 reaches rank 0 there.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

command -v python3 >/dev/null || { echo "ok 1 # SKIP python3 is not installed"; echo 1..1; exit 0; }
D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts on the slurm executor" sx_start "$D"
$GP queue create G --deserved 16 >/dev/null && $GP queue create g1 --parent G --deserved 16 >/dev/null
tap_is "queues created" "$?" 0

cat >"$TMP/rendezvous.py" <<'PY'
import os, socket, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
print(f"rank={rank} world={world} master={addr}:{port} node={os.environ['GPUPOOL_NODE']} "
      f"slurm_job={os.environ['SLURM_JOB_ID']} gpus={os.environ.get('CUDA_VISIBLE_DEVICES')}",
      flush=True)
if rank == 0:
    s = socket.create_server((addr, port))
    s.settimeout(60)
    c, _ = s.accept()
    print("rank 0 heard:", c.recv(100).decode(), flush=True)
else:
    for _ in range(300):
        try:
            c = socket.create_connection((addr, port))
            break
        except OSError:
            time.sleep(0.2)
    c.sendall(f"hello from rank {rank}".encode())
PY
$GP submit --project g1 --gang 2 --gpu 4 -- python3 "$TMP/rendezvous.py" >/dev/null
# Running, or already done: on a loaded machine the two ranks can meet and
# end between two looks (it read neither within 30 s once, then succeeded).
ran() { has_count 1 running g1 || has_count 1 succeeded g1; }
tap_ok "the gang runs" wait_until 60 ran
two_nodes() { [ "$(sx_jobs | cut -d' ' -f4 | sort -u | grep -c n)" = 2 ]; }
tap_ok "as two Slurm jobs on two nodes" wait_until 30 two_nodes
# All or nothing in Slurm's books too: both jobs were submitted held
# (priority 0) and released only once both were accepted, so that neither
# could start while the other might still be refused. slurmctld's log says
# so: both submissions (InitPrio=0) come before the first release.
j0=$(sx_jobs | grep "\.w1\.t0\." | cut -d' ' -f1)
j1=$(sx_jobs | grep "\.w1\.t1\." | cut -d' ' -f1)
line_of() { grep -n "$1" "$GP_SLURM_DIR/log/slurmctld.log" | head -1 | cut -d: -f1; }
held_then_released() {
    s0=$(line_of "submit_batch_job: JobId=$j0 InitPrio=0 ")
    s1=$(line_of "submit_batch_job: JobId=$j1 InitPrio=0 ")
    r=$(line_of "release hold on JobId=\($j0\|$j1\) ")
    [ -n "$s0" ] && [ -n "$s1" ] && [ -n "$r" ] && [ "$s0" -lt "$r" ] && [ "$s1" -lt "$r" ]
}
tap_ok "both jobs were submitted held, then released ($j0, $j1)" held_then_released
tap_ok "and succeeds" wait_until 60 has_count 1 succeeded g1
l0=$($GP logs --task 0 1)
l1=$($GP logs --task 1 1)
# What a failure needs to be understood: where each rank ran, what it said,
# and who held the master's port.
has_count 1 succeeded g1 || {
    $GP describe 1 2>&1 | tail -20 | sed 's/^/# /'
    echo "$l0" | sed 's/^/# rank 0: /'
    echo "$l1" | sed 's/^/# rank 1: /'
    ss -ltnp 2>/dev/null | grep ':2950' | sed 's/^/# listening: /'
}
tap_ok "task 0 is rank 0 of 2" contains "$l0" "rank=0 world=2 master=127.0.0.1:29501"
tap_ok "task 1 is rank 1 of 2, same master" contains "$l1" "rank=1 world=2 master=127.0.0.1:29501"
n0=$(echo "$l0" | sed -n 's/.* node=\(n[0-9]\).*/\1/p')
n1=$(echo "$l1" | sed -n 's/.* node=\(n[0-9]\).*/\1/p')
tap_ok "on two nodes ($n0, $n1)" test -n "$n0" -a -n "$n1" -a "$n0" != "$n1"
tap_ok "each with four GPUs from Slurm" contains "$l1" "gpus=0,1,2,3"
tap_ok "rank 1 reached rank 0 at MASTER_ADDR:MASTER_PORT" contains "$l0" "rank 0 heard: hello from rank 1"
tap_done
