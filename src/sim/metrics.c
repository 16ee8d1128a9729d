/*
 * metrics.c — curves, quantiles and time-weighted means (see metrics.h).
 */
#include "sim/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sim_curve_init(sim_curve *c) {
    memset(c, 0, sizeof *c);
}

void sim_curve_add(sim_curve *c, double x, const double y[SIM_CURVE_VALUES]) {
    /* nearbyint rounds half to even in the default rounding mode, which is
     * what Python's round() does to the analysis scripts' x. */
    double r = nearbyint(x);
    if (!(r >= 0 && r <= SIM_CURVE_MAX))
        return;
    int i = (int)r;
    for (int k = 0; k < SIM_CURVE_VALUES; k++)
        c->sum[i][k] += y[k];
    c->count[i]++;
}

void sim_curve_rows(const sim_curve *c, sim_curve_row rows[SIM_CURVE_MAX + 1]) {
    for (int x = 0; x <= SIM_CURVE_MAX; x++) {
        int lo = x, hi = x;
        if (c->count[x] == 0) {
            lo = x > 0 ? x - 1 : 0;
            hi = x < SIM_CURVE_MAX ? x + 1 : SIM_CURVE_MAX;
        }
        double s[SIM_CURVE_VALUES] = {0};
        int64_t n = 0;
        for (int i = lo; i <= hi; i++) {
            for (int k = 0; k < SIM_CURVE_VALUES; k++)
                s[k] += c->sum[i][k];
            n += c->count[i];
        }
        rows[x].present = n > 0;
        for (int k = 0; k < SIM_CURVE_VALUES; k++)
            rows[x].y[k] = n > 0 ? s[k] / (double)n : 0;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sim_quantile(double *v, size_t n, double q) {
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    if (q <= 0)
        return v[0];
    if (q >= 1)
        return v[n - 1];
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double frac = pos - (double)i;
    return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * frac : v[i];
}

void sim_twmean_init(sim_twmean *m) {
    memset(m, 0, sizeof *m);
}

void sim_twmean_set(sim_twmean *m, int64_t t, double v) {
    if (!m->started) {
        m->started = 1;
        m->start = m->last = t;
    } else if (t > m->last) {
        m->area += m->value * (double)(t - m->last);
        m->last = t;
    }
    m->value = v;
}

double sim_twmean_mean(const sim_twmean *m, int64_t t) {
    if (!m->started)
        return 0;
    double area = m->area;
    if (t > m->last)
        area += m->value * (double)(t - m->last);
    return t > m->start ? area / (double)(t - m->start) : m->value;
}
