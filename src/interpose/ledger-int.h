/*
 * ledger-int.h — the interposer's own side of a slice's ledger (ledger.h):
 * the gps__ledger_* functions that charge and release memory under the
 * ledger's robust process-shared lock, for the interposer and its tests.
 * No other part includes it: the executors and the daemon see only the
 * public gp_ledger_* reader API of ledger.h.
 */
#ifndef GP_INTERPOSE_LEDGER_INT_H
#define GP_INTERPOSE_LEDGER_INT_H

#include <stdint.h>

#include "interpose/ledger.h"

/* Opens a ledger private to this process and its forked children
 * (anonymous shared memory): what a process without GPUPOOL_SLICE uses. */
int gps__ledger_open_private(gp_ledger **out, char *err);

/* Finds or adds the GPU with this UUID. A new GPU gets `cap` and the
 * compute share `share`; an existing one keeps its own. Returns its index,
 * or GP_ENOSPC when the slice already has GP_LEDGER_MAX_DEVICES GPUs. */
int gps__ledger_device(gp_ledger *l, const uint8_t uuid[16], uint64_t cap, uint32_t share);

/* Index of the GPU with this UUID, or GP_ENOENT; never adds one. */
int gps__ledger_find(gp_ledger *l, const uint8_t uuid[16]);

/*
 * Charges `bytes` on GPU `dev` to this process, within the GPU's cap in the
 * ledger and within `bound` (the cap this process was given: the ledger's
 * own may have been written by someone else). When the charge would go
 * over the cap, processes that died are reaped and the charge retried once.
 * Returns 0, GP_ENOMEM when over the cap (nothing is charged), GP_ENOSPC
 * when the process table is full, or GP_ECORRUPT when the lock cannot be
 * recovered.
 */
int gps__ledger_charge(gp_ledger *l, int dev, uint64_t bytes, uint64_t bound);

/* Gives back `bytes` charged on GPU `dev` by this process (clamped so that
 * no counter goes below zero). */
void gps__ledger_release(gp_ledger *l, int dev, uint64_t bytes);

/* Cap and current use of GPU `dev`; reaps dead processes first when the
 * last reap is more than a second old. */
void gps__ledger_get(gp_ledger *l, int dev, uint64_t *cap, uint64_t *used);

/* Compute share of GPU `dev` in percent (0: none), and this slice's pids,
 * for the throttle (share.c). Returns how many pids were written. */
uint32_t gps__ledger_share(gp_ledger *l, int dev);
int gps__ledger_pids(gp_ledger *l, int *pids, int max);

/* In a forked child: forget the parent's process slot, so that the child
 * charges its own. The mapping itself is inherited and stays valid. */
void gps__ledger_after_fork(gp_ledger *l);

/* Locks and unlocks the ledger's lock, for tests that kill a holder. */
int gps__ledger_lock(gp_ledger *l);

#endif /* GP_INTERPOSE_LEDGER_INT_H */
