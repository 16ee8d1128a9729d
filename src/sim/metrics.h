/*
 * metrics.h — the simulator's measurements: the FGD experiment's curves
 * (values averaged per integer percentage of arrived demand, as the paper's
 * analysis scripts discretise them), percentiles, and time-weighted means.
 * Pure arithmetic, no I/O; each function states its exact definition so the
 * tests can check it on hand-computed cases.
 */
#ifndef GP_SIM_METRICS_H
#define GP_SIM_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define SIM_CURVE_MAX    130 /* x runs over 0..130 percent */
#define SIM_CURVE_VALUES 3   /* allocation, frag, frag ratio */

/* Accumulates events (x, y[0..2]) into integer buckets of x. */
typedef struct sim_curve {
    double sum[SIM_CURVE_MAX + 1][SIM_CURVE_VALUES];
    int64_t count[SIM_CURVE_MAX + 1];
} sim_curve;

typedef struct sim_curve_row {
    int present; /* 0: no event near this x */
    double y[SIM_CURVE_VALUES];
} sim_curve_row;

void sim_curve_init(sim_curve *c);

/* Adds one event: x is rounded half to even (Python's round) to the nearest
 * integer; events outside 0..130 after rounding are ignored. */
void sim_curve_add(sim_curve *c, double x, const double y[SIM_CURVE_VALUES]);

/* Row x: the mean of the events whose rounded x equals x; if there are none,
 * the mean of those rounded to x-1..x+1; if still none, not present. */
void sim_curve_rows(const sim_curve *c, sim_curve_row rows[SIM_CURVE_MAX + 1]);

/* The q-quantile (0 <= q <= 1) of v[0..n) by linear interpolation between
 * closest ranks (numpy's default); sorts v in place. 0 if n is 0. */
double sim_quantile(double *v, size_t n, double q);

/* A value that changes at points in time; mean() weighs each value by how
 * long it held. */
typedef struct sim_twmean {
    double area;         /* integral of value dt so far */
    double value;        /* current value */
    int64_t start, last; /* first and last time seen */
    int started;
} sim_twmean;

void sim_twmean_init(sim_twmean *m);
/* The value becomes v at time t (t never goes back). */
void sim_twmean_set(sim_twmean *m, int64_t t, double v);
/* The time-weighted mean over [start, t]; the current value if no time has
 * passed. */
double sim_twmean_mean(const sim_twmean *m, int64_t t);

#endif /* GP_SIM_METRICS_H */
