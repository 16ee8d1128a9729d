/*
 * gp_workload.h — a workload's states as the API names them, for the daemon
 * that records them and the CLI and console that read them.
 *
 * PENDING, STARTING (the intent to launch is written, tasks may be
 * starting), RUNNING, STOPPING (checkpoint signal sent, grace period
 * running) and PAUSED (its task frozen, its GPU state in host memory:
 * evicted in pause mode, waiting to be resumed on its node) are active: the
 * daemon's scheduling loop holds them, and they come first, so that the
 * store selects them as state <= PAUSED. The others are over: final, except
 * SUSPENDED, which a resume reopens.
 */
#ifndef GP_COMMON_GP_WORKLOAD_H
#define GP_COMMON_GP_WORKLOAD_H

#include "common/gp_names.h"

#define GP_WL_STATES(XX)                                                                           \
    XX(GP_WL_PENDING, "pending")                                                                   \
    XX(GP_WL_STARTING, "starting")                                                                 \
    XX(GP_WL_RUNNING, "running")                                                                   \
    XX(GP_WL_STOPPING, "stopping")                                                                 \
    XX(GP_WL_PAUSED, "paused")                                                                     \
    XX(GP_WL_SUSPENDED, "suspended")                                                               \
    XX(GP_WL_SUCCEEDED, "succeeded")                                                               \
    XX(GP_WL_FAILED, "failed")                                                                     \
    XX(GP_WL_DELETED, "deleted")

GP_NAMED_ENUM_DECLARE(gp_wl_state, GP_WL_STATES, GP_WL_NSTATES);

/* 1 if a workload in state s is active (the daemon runs it or will). */
static inline int gp_wl_state_active(gp_wl_state s) {
    return s <= GP_WL_PAUSED;
}

#endif
