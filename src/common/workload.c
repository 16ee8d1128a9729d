/*
 * workload.c — the names of a workload's states (gp_workload.h).
 */
#include "common/gp_workload.h"

GP_NAMED_ENUM_DEFINE(gp_wl_state, GP_WL_STATES, GP_WL_NSTATES, "unknown")
