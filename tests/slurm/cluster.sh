#!/bin/sh
# tests/slurm/cluster.sh — a real Slurm cluster on this one host, for the
# Slurm executor's tests: its own munge (key and socket), one slurmctld and
# four slurmd (`slurmd -N n1` ... `n4`), each node with 4 GPUs declared as
# GRES (AutoDetect=off, File= device nodes made with mknod, character major
# 195, in a directory of the cluster's own), and accounting: slurmdbd on a
# MariaDB server of its own (data directory, socket and port under DIR; made
# with mariadb-install-db, started as root with --user=root; no system
# service is touched), with the cluster, the account `gpupool` and root added
# with sacctmgr. Everything lives under DIR and listens on loopback ports
# from PORT on, so that the cluster never touches another cluster or daemon
# on the host. Where slurmdbd or MariaDB is not installed, the cluster runs
# without accounting and DIR/env says GP_SLURM_ACCOUNTING=0.
#
# Usage: tests/slurm/cluster.sh start|stop|status|env [DIR]
#        tests/slurm/cluster.sh kill-node|kill-slurmd|start-node nK [DIR]
#        tests/slurm/cluster.sh restart-ctld [DIR]
#   DIR   default $GP_SLURM_DIR or /tmp/gpupool-slurm
#   PORT  $GP_SLURM_PORT, default 26817: slurmctld on PORT, slurmd nK on PORT+K,
#         MariaDB on PORT+5, slurmdbd on PORT+6
#
# `start` writes DIR/env (SLURM_CONF=...), which a test sources to reach the
# cluster with the ordinary commands, and waits until every node is idle; it
# exits 77 with the reason on standard error when Slurm is not installed or
# cannot run here, so that a caller can report SKIP. `stop` ends every daemon
# it started (by the pids it recorded) and keeps DIR's logs. `kill-node`
# makes node nK die (SIGKILL to its slurmd and to every slurmstepd of its
# jobs, which takes their processes along); `kill-slurmd` kills only its
# slurmd, so that its jobs' processes go on unseen, as behind a network
# partition, until `start-node` brings it back (then Slurm ends them);
# `restart-ctld` stops slurmctld and starts it again on its saved state.
set -u
cmd=${1:-}
NODE=
case "$cmd" in kill-node | kill-slurmd | start-node)
    NODE=${2:-}
    shift
    ;;
esac
DIR=${2:-${GP_SLURM_DIR:-/tmp/gpupool-slurm}}
PORT=${GP_SLURM_PORT:-26817}
NODES="n1 n2 n3 n4"
HOST=$(hostname)
# Accounting needs slurmdbd and a MariaDB server (scripts/install-deps.sh).
ACCT=1
for p in slurmdbd mariadbd mariadb-install-db mariadb; do
    command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || ACCT=0
done

skip() {
    echo "cluster.sh: SKIP: $*" >&2
    exit 77
}

die() {
    echo "cluster.sh: $*" >&2
    exit 1
}

# pid_of NAME: the recorded pid of a daemon we started, if it still runs.
pid_of() {
    f="$DIR/run/$1.pid"
    [ -s "$f" ] || return 1
    p=$(cat "$f")
    kill -0 "$p" 2>/dev/null && echo "$p"
}

write_conf() {
    mkdir -p "$DIR/etc" "$DIR/run" "$DIR/log" "$DIR/spool" "$DIR/dev" "$DIR/munge" \
        "$DIR/munge-run" "$DIR/state" "$DIR/db"
    chmod 700 "$DIR/db"
    chmod 700 "$DIR/munge"
    # munge's socket is every user's, as /run/munge is on a real cluster
    # (a user's own srun, or root's with --uid, signs its requests there);
    # its key stays root's.
    chmod 755 "$DIR/munge-run"
    # Jobs of other users than root run their script from the spool below
    # DIR: they must pass through it (a mktemp directory is 0700).
    chmod 711 "$DIR"
    i=0
    for n in $NODES; do
        mkdir -p "$DIR/spool/$n"
        for g in 0 1 2 3; do
            minor=$((i * 4 + g))
            [ -e "$DIR/dev/nvidia$minor" ] || mknod "$DIR/dev/nvidia$minor" c 195 "$minor" ||
                skip "cannot make device nodes with mknod in $DIR/dev"
        done
        i=$((i + 1))
    done
    user=$(id -un)
    cat >"$DIR/etc/slurm.conf" <<EOF
# Written by tests/slurm/cluster.sh: a test cluster on one host.
ClusterName=gptest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmUser=$user
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge-run/munge.sock
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=64
GresTypes=gpu
$(accounting_conf)
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=10
MessageTimeout=20
InactiveLimit=0
KillWait=5
MinJobAge=300
MaxJobCount=20000
SuspendTime=INFINITE
NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT + 1)) CPUs=16 RealMemory=65536 Gres=gpu:a100:4 Feature=rack1,nvlink State=UNKNOWN
NodeName=n2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT + 2)) CPUs=16 RealMemory=65536 Gres=gpu:a100:4 Feature=rack1,nvlink State=UNKNOWN
NodeName=n3 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT + 3)) CPUs=16 RealMemory=65536 Gres=gpu:h100:4 Feature=rack2 State=UNKNOWN
NodeName=n4 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT + 4)) CPUs=16 RealMemory=65536 Gres=gpu:h100:4 Feature=rack2 State=UNKNOWN
PartitionName=gpu Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=amp Nodes=n[1-2] MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=hop Nodes=n[3-4] MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    cat >"$DIR/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=n1 Name=gpu Type=a100 File=$DIR/dev/nvidia[0-3]
NodeName=n2 Name=gpu Type=a100 File=$DIR/dev/nvidia[4-7]
NodeName=n3 Name=gpu Type=h100 File=$DIR/dev/nvidia[8-11]
NodeName=n4 Name=gpu Type=h100 File=$DIR/dev/nvidia[12-15]
EOF
    cat >"$DIR/etc/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
EOF
    [ -s "$DIR/munge/munge.key" ] ||
        dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$DIR/munge/munge.key"
    if [ "$ACCT" = 1 ]; then
        [ -s "$DIR/db/password" ] || od -An -N12 -tx1 /dev/urandom | tr -d ' \n' >"$DIR/db/password"
        cat >"$DIR/etc/slurmdbd.conf" <<EOF
# Written by tests/slurm/cluster.sh: the test cluster's accounting.
AuthType=auth/munge
AuthInfo=socket=$DIR/munge-run/munge.sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$((PORT + 6))
SlurmUser=$user
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$((PORT + 5))
StorageUser=slurm
StoragePass=$(cat "$DIR/db/password")
StorageLoc=slurm_acct_db
EOF
        chmod 600 "$DIR/etc/slurmdbd.conf"
    fi
    {
        echo "SLURM_CONF=$DIR/etc/slurm.conf; export SLURM_CONF"
        echo "GP_SLURM_ACCOUNTING=$ACCT"
    } >"$DIR/env"
}

# The accounting lines of slurm.conf: slurmdbd, with job comments stored
# (gpupool's jobs say their workload, user and project there), or none.
# AccountingStoragePass names the munge socket the commands and slurmctld
# use to reach slurmdbd (they ignore AuthInfo for that connection).
accounting_conf() {
    if [ "$ACCT" = 1 ]; then
        printf '%s\n' "AccountingStorageType=accounting_storage/slurmdbd" \
            "AccountingStorageHost=127.0.0.1" "AccountingStoragePort=$((PORT + 6))" \
            "AccountingStoreFlags=job_comment" "AccountingStoragePass=$DIR/munge-run/munge.sock"
    else
        echo "AccountingStorageType=accounting_storage/none"
    fi
}

# wait_for SECONDS COMMAND...: runs COMMAND every 0.2 s until it succeeds or
# SECONDS have passed (then fails).
wait_for() {
    deadline=$(($(date +%s) + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

all_idle() {
    out=$(SLURM_CONF="$DIR/etc/slurm.conf" sinfo -h -N -p gpu -o '%N %t' 2>/dev/null) || return 1
    [ "$(echo "$out" | grep -c ' idle$')" = 4 ]
}

start_munge() {
    pid_of munged >/dev/null && return 0
    munged --socket="$DIR/munge-run/munge.sock" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
        --seed-file="$DIR/munge/munged.seed" --force ||
        skip "munged did not start (see $DIR/log/munged.log)"
    wait_for 10 test -S "$DIR/munge-run/munge.sock" || skip "munged made no socket"
}

# The MariaDB server of the accounting: a data directory of its own (made
# once), its socket and port; a database user for slurmdbd.
start_db() {
    pid_of mariadbd >/dev/null && return 0
    fresh=0
    if [ ! -d "$DIR/db/data/mysql" ]; then
        mariadb-install-db --no-defaults --datadir="$DIR/db/data" --user=root --skip-test-db \
            --auth-root-authentication-method=socket >"$DIR/log/mariadb-install.log" 2>&1 ||
            skip "mariadb-install-db failed (see $DIR/log/mariadb-install.log)"
        fresh=1
    fi
    mariadbd --no-defaults --datadir="$DIR/db/data" --socket="$DIR/db/mysql.sock" \
        --port=$((PORT + 5)) --bind-address=127.0.0.1 --user=root --skip-name-resolve \
        --pid-file="$DIR/run/mariadbd.pid" --log-error="$DIR/log/mariadb.log" \
        --innodb-buffer-pool-size=32M >/dev/null 2>&1 &
    wait_for 60 mariadb --no-defaults --socket="$DIR/db/mysql.sock" -u root -e 'select 1' ||
        skip "the MariaDB server did not start (see $DIR/log/mariadb.log)"
    if [ "$fresh" = 1 ]; then
        mariadb --no-defaults --socket="$DIR/db/mysql.sock" -u root -e \
            "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$(cat "$DIR/db/password")';
             GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
            die "cannot create slurmdbd's database user"
    fi
}

# slurmdbd on that database, and the cluster, the account gpupool and root
# in its books (sacctmgr), before slurmctld starts and registers.
start_dbd() {
    if ! pid_of slurmdbd >/dev/null; then
        SLURM_CONF="$DIR/etc/slurm.conf" slurmdbd ||
            skip "slurmdbd did not start (see $DIR/log/slurmdbd.log)"
    fi
    wait_for 60 env SLURM_CONF="$DIR/etc/slurm.conf" sacctmgr -n list cluster ||
        skip "slurmdbd does not answer (see $DIR/log/slurmdbd.log)"
    for what in "cluster gptest" "account gpupool cluster=gptest" \
        "user $(id -un) account=gpupool cluster=gptest"; do
        # shellcheck disable=SC2086 # one sacctmgr entity and its options
        SLURM_CONF="$DIR/etc/slurm.conf" sacctmgr -i add $what >/dev/null 2>&1
    done
    SLURM_CONF="$DIR/etc/slurm.conf" sacctmgr -n list cluster format=cluster | grep -q gptest ||
        die "sacctmgr could not add the cluster gptest"
}

start_slurmd() {
    n=$1
    pid_of "slurmd-$n" >/dev/null && return 0
    SLURM_CONF="$DIR/etc/slurm.conf" slurmd -N "$n" -f "$DIR/etc/slurm.conf" ||
        die "slurmd -N $n did not start (see $DIR/log/slurmd-$n.log)"
}

start() {
    for p in munged slurmctld slurmd sinfo sbatch scontrol squeue; do
        command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] ||
            skip "$p is not installed (scripts/install-deps.sh installs Slurm)"
    done
    PATH=$PATH:/usr/sbin
    write_conf
    start_munge
    if [ "$ACCT" = 1 ]; then
        start_db
        start_dbd
    fi
    if ! pid_of slurmctld >/dev/null; then
        SLURM_CONF="$DIR/etc/slurm.conf" slurmctld -f "$DIR/etc/slurm.conf" -i ||
            skip "slurmctld did not start (see $DIR/log/slurmctld.log)"
    fi
    wait_for 30 env SLURM_CONF="$DIR/etc/slurm.conf" scontrol ping ||
        skip "slurmctld does not answer (see $DIR/log/slurmctld.log)"
    for n in $NODES; do
        start_slurmd "$n"
    done
    wait_for 60 all_idle || die "nodes did not become idle: $(SLURM_CONF="$DIR/etc/slurm.conf" \
        sinfo -N 2>&1 | tr '\n' ' ')"
    echo "cluster.sh: 4 nodes idle; SLURM_CONF=$DIR/etc/slurm.conf"
}

stop() {
    PATH=$PATH:/usr/sbin
    # Jobs still running end with their nodes.
    if pid_of slurmctld >/dev/null; then
        for n in $NODES; do
            kill_node "$n"
        done
    fi
    for n in $NODES; do
        p=$(pid_of "slurmd-$n") && kill "$p"
    done
    p=$(pid_of slurmctld) && kill "$p"
    wait_for 20 sh -c "! kill -0 \$(cat '$DIR/run/slurmctld.pid' 2>/dev/null) 2>/dev/null"
    p=$(pid_of slurmdbd) && kill "$p"
    wait_for 20 sh -c "! kill -0 \$(cat '$DIR/run/slurmdbd.pid' 2>/dev/null) 2>/dev/null"
    p=$(pid_of mariadbd) && kill "$p"
    p=$(pid_of munged) && kill "$p"
    for name in $(for n in $NODES; do echo "slurmd-$n"; done) slurmctld slurmdbd mariadbd munged; do
        wait_for 20 sh -c "! kill -0 \$(cat '$DIR/run/$name.pid' 2>/dev/null) 2>/dev/null"
        p=$(pid_of "$name") && kill -9 "$p"
        rm -f "$DIR/run/$name.pid"
    done
    return 0
}

# kill_node nK: the node dies with everything it runs: its slurmd, and for
# each job Slurm placed there the session of its slurmstepd (which holds every
# process of the job).
kill_node() {
    jobs=$(SLURM_CONF="$DIR/etc/slurm.conf" squeue -h -w "$1" -o %i)
    p=$(pid_of "slurmd-$1") && kill -9 "$p"
    rm -f "$DIR/run/slurmd-$1.pid"
    for j in $jobs; do
        for sp in $(ps -eo pid=,args= | awk -v j="slurmstepd: [$j." 'index($0, j) {print $1}'); do
            sid=$(ps -o sid= -p "$sp" | tr -d ' ')
            [ -n "$sid" ] || continue
            for q in $(ps -eo pid=,sid= | awk -v s="$sid" '$2 == s {print $1}'); do
                kill -9 "$q" 2>/dev/null
            done
        done
    done
    return 0
}

case "$cmd" in
start) start ;;
kill-node) kill_node "$NODE" ;;
kill-slurmd)
    p=$(pid_of "slurmd-$NODE") && kill -9 "$p"
    rm -f "$DIR/run/slurmd-$NODE.pid"
    ;;
start-node)
    PATH=$PATH:/usr/sbin
    start_slurmd "$NODE"
    ;;
restart-ctld)
    PATH=$PATH:/usr/sbin
    p=$(pid_of slurmctld) && kill "$p"
    wait_for 20 sh -c "! kill -0 $p 2>/dev/null"
    SLURM_CONF="$DIR/etc/slurm.conf" slurmctld -f "$DIR/etc/slurm.conf" ||
        die "slurmctld did not start again"
    wait_for 30 env SLURM_CONF="$DIR/etc/slurm.conf" scontrol ping || die "slurmctld does not answer"
    ;;
stop) stop ;;
status) SLURM_CONF="$DIR/etc/slurm.conf" sinfo -N ;;
env) cat "$DIR/env" ;;
*)
    echo "usage: $0 start|stop|status|env [DIR]" >&2
    exit 2
    ;;
esac
