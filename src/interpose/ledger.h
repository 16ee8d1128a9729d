/*
 * ledger.h — the shared-memory ledger of one GPU slice.
 *
 * All processes of one workload share their slice's memory cap through a
 * ledger in POSIX shared memory named "/gpupool-slice-<name>" (visible as
 * /dev/shm/gpupool-slice-<name>), created on first use with owner-only
 * permissions. It holds, per GPU of the slice (keyed by the GPU's UUID, so
 * that processes with different CUDA_VISIBLE_DEVICES agree), the cap and
 * the bytes in use, and per process the bytes that process holds on each
 * GPU, so that the memory of a process that died is given back.
 *
 * This header is the node side's (the executors, the daemon through them):
 * the public gp_ledger_* reader API, linked from libgpledger.a, to make a
 * task's ledger, open it, read what it really uses and remove it when the
 * slice ends. The interposer's own gps__ledger_* functions, which charge and
 * release memory under the ledger's robust process-shared lock, are in
 * ledger-int.h, which no other part includes.
 *
 * The layout is versioned (magic, version and total size are checked on
 * every open); see docs/interposer.md for the format.
 */
#ifndef GP_INTERPOSE_LEDGER_H
#define GP_INTERPOSE_LEDGER_H

#include <stdint.h>

#define GP_LEDGER_MAX_DEVICES 16
#define GP_LEDGER_MAX_PROCS   256
#define GP_LEDGER_NAME_MAX    100

/* Where an executor running as root writes the limits of each slice, one
 * root-owned file per task, <dir>/<instance>.<task key>, with the lines
 * "memory_limit=BYTES", "compute_share=PERCENT" and "slice=LEDGER NAME". The
 * interposer finds its task's file from its cgroup path (".../<instance>/
 * <task key>"), which the task cannot change, and takes those limits as
 * upper bounds that the environment cannot raise. */
#define GP_SLICE_FILE_DIR "/run/gpupool/slices"

/* Where an executor running as root makes each task's ledger itself, before
 * the task starts: GP_LEDGER_DIR/<instance>.<task key>, in a directory only
 * root may enter, the file owned by the task's user (0600). The task's own
 * mount namespace binds it over GP_LEDGER_MOUNT (an empty file of root's
 * elsewhere), and the slice file names that path in a "ledger=" line; the
 * interposer then opens only that file and never creates a ledger, so no
 * other task, of any user, can reach it by a name or pre-create it. */
#define GP_LEDGER_DIR   "/run/gpupool/ledgers"
#define GP_LEDGER_MOUNT "/run/gpupool/ledger"

typedef struct gp_ledger gp_ledger;

/* What one GPU of a slice uses, as gp_ledger_usage() reports it. */
typedef struct gp_ledger_device_usage {
    uint8_t uuid[16];       /* the GPU's UUID, as CUDA and NVML give it */
    uint64_t cap;           /* bytes the slice may use on this GPU */
    uint64_t used;          /* bytes charged now, all live processes together */
    uint64_t peak;          /* highest value of used since the ledger was made */
    uint32_t processes;     /* live processes holding memory on this GPU */
    uint32_t compute_share; /* percent of the GPU's time, 0 when not limited */
} gp_ledger_device_usage;

/* Flags of gp_ledger_open(). */
enum {
    GP_LEDGER_READ = 0,       /* read only; never changes the ledger */
    GP_LEDGER_WRITE = 1 << 0, /* may reap processes that died (same pid namespace) */
    GP_LEDGER_CREATE = 1 << 1 /* create it if missing (the interposer's mode) */
};

/*
 * Opens the ledger of slice `name` (letters, digits, '.', '_', '-'; at most
 * GP_LEDGER_NAME_MAX characters). On success *out holds a handle to close
 * with gp_ledger_close() and 0 is returned. On error a negative GP_E* code
 * is returned, *out is left unchanged and, when err is not NULL, err
 * (256 bytes) says why: GP_EINVAL for a bad name, GP_ENOENT when there is no
 * such ledger, GP_ECORRUPT for a wrong magic, version or size, GP_EPERM when
 * the ledger is not owned by this user, GP_ESYS for a failed system call.
 */
int gp_ledger_open(const char *name, int flags, gp_ledger **out, char *err);

/* Unmaps and frees the handle; the ledger itself stays. NULL is ignored. */
void gp_ledger_close(gp_ledger *l);

/*
 * Fills out[0..max) with the usage of each GPU the slice has used and
 * returns how many there are (which may exceed max; only max are written).
 * With a handle opened GP_LEDGER_WRITE, processes that died are reaped
 * first; a read-only handle reports the ledger as the workload left it.
 */
int gp_ledger_usage(gp_ledger *l, gp_ledger_device_usage *out, int max);

/*
 * Makes a fresh ledger in the file at path for a task whose processes run as
 * uid:gid (an executor's use, see GP_LEDGER_DIR): whatever was at path
 * before (a file, a link, a ledger someone made first) is removed, never
 * followed or reused; the new file is empty books, marked as made by an
 * executor, owned by uid:gid with mode 0600. Returns 0, or GP_ESYS with err
 * (256 bytes, may be NULL) saying why; then nothing is left at path.
 */
int gp_ledger_create_file(const char *path, unsigned uid, unsigned gid, char *err);

/*
 * Opens the ledger in the file at path (GP_LEDGER_READ or GP_LEDGER_WRITE;
 * never creates). Besides gp_ledger_open()'s checks, the ledger must have
 * been made by gp_ledger_create_file(): GP_EPERM otherwise.
 */
int gp_ledger_open_file(const char *path, int flags, gp_ledger **out, char *err);

/*
 * The GPUs a slice's books are kept under, for a slice whose processes the
 * driver moved onto other GPUs (a paused task resumed elsewhere): its rows
 * are keyed by the new GPUs' UUIDs, so that a process started afterwards
 * books into the same rows, under the same caps, as the processes moved.
 * gp_ledger_file_gpus() reads the UUIDs of the ledger's GPU rows, in the
 * file at path, into out[0..max) and returns how many rows there are;
 * gp_ledger_file_set_gpus() writes uuids[0..n) over them, n being that
 * count (GP_ESTATE otherwise: a row was added since they were read). Each
 * row keeps its cap, its use and every process's holding. Both read and
 * write the file with pread and pwrite, never mapping it, so whatever the
 * workload wrote there cannot fault the caller; they are meant for a slice
 * none of whose processes runs (its task is frozen), and writing whole rows
 * makes a call made again come out the same. Errors: GP_ENOENT (no such
 * file), GP_ECORRUPT (not a ledger of this version), GP_EPERM (not root, and
 * the file is another user's or open to others), GP_EINVAL (max or n out of
 * range), GP_ESYS; err (256 bytes, may be NULL) says why.
 */
int gp_ledger_file_gpus(const char *path, uint8_t (*out)[16], int max, char *err);
int gp_ledger_file_set_gpus(const char *path, const uint8_t (*uuids)[16], int n, char *err);

/* Removes the ledger of slice `name` (when the slice ends). Processes that
 * still have it mapped keep working on their copy. Returns 0, GP_EINVAL
 * for a bad name or GP_ENOENT. */
int gp_ledger_unlink(const char *name);

#endif /* GP_INTERPOSE_LEDGER_H */
