#!/bin/sh
# A workload's checkpoint directory (GPUPOOL_CHECKPOINT_DIR, and its working
# directory when it names none) was always DATA/checkpoints/ID, on the
# store's disk: a workload that filled it left every later submission
# refused with "the store's disk is full". --checkpoint-dir puts them on a
# disk of their own (here a real 4 MiB tmpfs where this test may mount one,
# as root); a bad value is refused at start, naming the setting; a root
# daemon checks that other users may pass through the directories above it,
# as it does for the data directory; and a workdir inside it is refused, as
# one inside the data directory is.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
C=$TMP/ckdisk
mkdir -p "$D" "$C"
touch "$TMP/a-file"
mounted=
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4m,mode=0700 tmpfs "$C" 2>/dev/null; then
    mounted=1
fi
UA=
trap 'gpd_stop; [ -n "$UA" ] && { pkill -9 -u "$UA" 2>/dev/null; userdel "$UA" 2>/dev/null; };
      [ -n "$mounted" ] && umount -l "$C"; cleanup' EXIT

gpd_abs=$(cd "$(dirname "$GPD")" && pwd)/gpupoold
out=$(cd "$TMP" && "$gpd_abs" --data-dir "$D" --checkpoint-dir a-file/ck 2>&1)
tap_ok "a relative --checkpoint-dir that cannot be made is refused, naming it" \
    contains "$out" "checkpoint-dir"
out=$("$GPD" --data-dir "$D" --checkpoint-dir "$TMP/a-file" 2>&1)
tap_ok "a --checkpoint-dir that is a file is refused, naming it" contains "$out" "checkpoint-dir"
tap_ok "and the file is left as it was" test -f "$TMP/a-file"

# mktemp made TMP 0700: let others pass it, so that only C's mode counts.
chmod 711 "$TMP"
tap_ok "gpupoold starts with its checkpoints in a directory of their own" \
    gpd_start "$D" --period 300ms --poll 200ms --checkpoint-dir "$C/ck" \
    --executor-config "emulate=$TMP/emulated.conf"
$GP queue create dept --deserved 8 >/dev/null && $GP queue create proj --parent dept --deserved 8 >/dev/null

id_of() { sed -n 's/.*"id": *\([0-9]*\).*/\1/p'; }
log_of() { $GP logs "$1" 2>/dev/null; }

# No workdir (the API's default): the task starts in its checkpoint directory.
W=$(api POST /api/v1/workloads \
    '{"project":"proj","gpu":1,"command":["sh","-c","echo ckpt=$GPUPOOL_CHECKPOINT_DIR; echo pwd=$(pwd)"]}' |
    id_of)
tap_ok "a workload without a workdir succeeds" wait_until 60 is_state "$W" succeeded
tap_ok "its GPUPOOL_CHECKPOINT_DIR is under --checkpoint-dir" \
    contains "$(log_of "$W")" "ckpt=$C/ck/$W"
tap_ok "and so is its working directory" contains "$(log_of "$W")" "pwd=$C/ck/$W"
tap_ok "nothing was made beside the store" test ! -e "$D/checkpoints/$W"

out=$($GP submit --project proj --workdir "$C/ck/1" -- true 2>&1)
tap_ok "a workdir inside --checkpoint-dir is refused, as one inside the data dir is" \
    contains "$out" "checkpoint directory"

if [ -z "$mounted" ]; then
    tap_skip "the checkpoint disk full and other users: cannot mount a small tmpfs here (not root)"
    tap_done
    exit
fi
FILL=$($GP --json submit --project proj --gpu 1 --name fill -- \
    sh -c 'dd if=/dev/zero of="$GPUPOOL_CHECKPOINT_DIR/fill" bs=64k; df -P .' | id_of)
tap_ok "a workload filling its checkpoint directory's disk ends" \
    wait_until 60 sh -c "[ \"\$(df -P '$C' | awk 'NR==2 {print \$4}')\" -eq 0 ] && $GP describe $FILL | grep -q -e failed -e succeeded"
NEXT=$($GP --json submit --project proj --gpu 1 --name next -- true 2>&1 | id_of)
tap_ok "the next submission is stored (the store lives elsewhere)" test -n "$NEXT"
tap_ok "and runs to its end" wait_until 60 is_state "$NEXT" succeeded

if ! command -v useradd >/dev/null; then
    tap_skip "other users: no useradd here"
    tap_done
    exit
fi
# The disk's root is 0700 (mode=0700): a workload of another user could not
# reach its checkpoint directory under it.
UA=gpck$$
useradd -M -d /nonexistent "$UA" || exit 1
gpd_stop
rm -f "$C/ck/$FILL/fill"
GPD_ROOT=no
tap_ok "gpupoold restarts as root with the checkpoint disk's root 0700" \
    gpd_start "$D" --period 300ms --poll 200ms --checkpoint-dir "$C/ck" \
    --executor-config "emulate=$TMP/emulated.conf"
tap_ok "it warns at start, naming the directory and the fix" \
    grep -q "warning: checkpoint dir .*$C (mode 0700).*chmod o+x $C" "$D.log"
TA=$($GP token create --user "$UA" --role researcher --scope proj | head -1)
out=$(GPUPOOL_TOKEN=$TA $GP submit --project proj --workdir /tmp -- true 2>&1)
tap_ok "a workload of $UA is refused with the fix" contains "$out" "chmod o+x $C"
chmod 711 "$C"
U=$(GPUPOOL_TOKEN=$TA $GP --json submit --project proj --workdir /tmp -- sh -c 'echo ok >"$GPUPOOL_CHECKPOINT_DIR/mine"' | id_of)
tap_ok "once it lets others pass, it is accepted and runs as $UA to its end" \
    wait_until 60 is_state "$U" succeeded
tap_is "its checkpoint directory is $UA's, under --checkpoint-dir" \
    "$(stat -c %U "$C/ck/$U" 2>/dev/null)" "$UA"
tap_done
