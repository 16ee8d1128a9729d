/*
 * html.c — the plan's HTML report (see plan.h): one self-contained file with
 * inline CSS and SVG charts and no script or external resource, so that it
 * opens the same in any browser without a network. Charts: GPU allocation
 * over time per mode, the distribution of queueing delay per mode (on the
 * given hardware), and the GPUs each mode needs to meet the target.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/plan.h"

#define W    860.0 /* chart size in SVG units */
#define H    300.0
#define ML   70.0 /* margins: left, right, top, bottom */
#define MR   20.0
#define MT   30.0
#define MB   45.0
#define BINS 200 /* points of the allocation curve */

static const char *const colour[SIM_MODE_COUNT] = {"#c0392b", "#2471a3", "#229954"};

/* Writes s with the five HTML special characters escaped. */
static void esc(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* A series of points to draw as one line. */
typedef struct line {
    const double *x, *y;
    size_t n;
    const char *colour, *label;
} line;

static double px(double x, double x0, double x1) {
    return ML + (x1 > x0 ? (x - x0) / (x1 - x0) : 0) * (W - ML - MR);
}

static double py(double y, double y0, double y1) {
    return H - MB - (y1 > y0 ? (y - y0) / (y1 - y0) : 0) * (H - MT - MB);
}

/* Axes, ticks (5 per axis; x in log10 if xlog), labels and the legend. */
static void axes(FILE *f, double x0, double x1, double y0, double y1, int xlog, const char *xlabel,
                 const char *ylabel, const line *ls, size_t nl) {
    fprintf(f,
            "<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' fill='#fff' "
            "stroke='#999'/>\n",
            ML, MT, W - ML - MR, H - MT - MB);
    for (int i = 0; i <= 4; i++) {
        double y = y0 + (y1 - y0) * i / 4, x = x0 + (x1 - x0) * i / 4;
        fprintf(f, "<text x='%.0f' y='%.1f' text-anchor='end' class='t'>%.4g</text>\n", ML - 6,
                py(y, y0, y1) + 4, y);
        fprintf(f, "<line x1='%.0f' x2='%.0f' y1='%.1f' y2='%.1f' stroke='#eee'/>\n", ML, W - MR,
                py(y, y0, y1), py(y, y0, y1));
        fprintf(f, "<text x='%.1f' y='%.0f' text-anchor='middle' class='t'>%.4g</text>\n",
                px(x, x0, x1), H - MB + 16, xlog ? pow(10, x) : x);
    }
    fprintf(f, "<text x='%.0f' y='%.0f' text-anchor='middle' class='l'>", (ML + W - MR) / 2, H - 8);
    esc(f, xlabel);
    fprintf(f,
            "</text>\n<text x='14' y='%.0f' transform='rotate(-90 14 %.0f)' "
            "text-anchor='middle' class='l'>",
            (MT + H - MB) / 2, (MT + H - MB) / 2);
    esc(f, ylabel);
    fputs("</text>\n", f);
    for (size_t k = 0; k < nl; k++) {
        fprintf(f,
                "<rect x='%.0f' y='8' width='14' height='10' fill='%s'/>"
                "<text x='%.0f' y='17' class='t'>",
                ML + 10 + 170.0 * (double)k, ls[k].colour, ML + 28 + 170.0 * (double)k);
        esc(f, ls[k].label);
        fputs("</text>\n", f);
    }
}

static void chart(FILE *f, const char *title, const line *ls, size_t nl, int xlog,
                  const char *xlabel, const char *ylabel, double ymax) {
    double x0 = INFINITY, x1 = -INFINITY, y1 = ymax;
    for (size_t k = 0; k < nl; k++)
        for (size_t i = 0; i < ls[k].n; i++) {
            x0 = fmin(x0, ls[k].x[i]);
            x1 = fmax(x1, ls[k].x[i]);
            y1 = fmax(y1, ls[k].y[i]);
        }
    if (!(x0 < x1)) {
        x0 = isfinite(x0) ? x0 : 0;
        x1 = x0 + 1;
    }
    fputs("<h2>", f);
    esc(f, title);
    fprintf(f,
            "</h2>\n<svg viewBox='0 0 %.0f %.0f' "
            "width='%.0f' height='%.0f'>\n",
            W, H, W, H);
    axes(f, x0, x1, 0, y1, xlog, xlabel, ylabel, ls, nl);
    for (size_t k = 0; k < nl; k++) {
        fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.6' points='", ls[k].colour);
        for (size_t i = 0; i < ls[k].n; i++)
            fprintf(f, "%.1f,%.1f ", px(ls[k].x[i], x0, x1), py(ls[k].y[i], 0, y1));
        fputs("'/>\n", f);
    }
    fputs("</svg>\n", f);
}

/* The time unit that suits a span of seconds: its length and name. */
static double time_unit(int64_t span, const char **name) {
    if (span >= 3 * 86400) {
        *name = "days since the first arrival";
        return 86400;
    }
    if (span >= 3 * 3600) {
        *name = "hours since the first arrival";
        return 3600;
    }
    *name = "minutes since the first arrival";
    return 60;
}

/* Allocation % in BINS equal time bins over [t0, t1] (time-weighted means
 * of the step function in r->series), x in units of `unit` seconds since
 * t0. */
static void alloc_bins(const sim_replay_result *r, int64_t t0, int64_t t1, double unit, double *x,
                       double *y) {
    double span = (double)(t1 > t0 ? t1 - t0 : 1), w = span / BINS;
    size_t j = 0;
    double cur = 0;
    for (int b = 0; b < BINS; b++) {
        double a = (double)t0 + w * b, e = a + w, area = 0, t = a;
        while (j < r->nseries && (double)r->series[j].t <= t)
            cur = (double)r->series[j++].milli;
        while (j < r->nseries && (double)r->series[j].t < e) {
            area += cur * ((double)r->series[j].t - t);
            t = (double)r->series[j].t;
            cur = (double)r->series[j++].milli;
        }
        area += cur * (e - t);
        x[b] = (a + w / 2 - (double)t0) / unit;
        y[b] = r->capacity_milli ? 100.0 * area / w / (double)r->capacity_milli : 0;
    }
}

static void summary_table(FILE *f, const sim_plan *p, int needed) {
    fputs("<table><tr><th>mode</th><th>GPUs</th><th>allocation %</th><th>delay p50 (s)</th>"
          "<th>delay p95 (s)</th><th>delay p99 (s)</th><th>JCT p50 (s)</th>"
          "<th>JCT p95 (s)</th><th>preemptions</th><th>unserved</th><th>rejected</th></tr>\n",
          f);
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        const sim_replay_result *r = needed ? &p->modes[m].needed : &p->modes[m].full;
        if (needed && !p->modes[m].found)
            continue;
        fprintf(f,
                "<tr><td>%s</td><td>%lld</td><td>%.2f</td><td>%.0f</td><td>%.0f</td>"
                "<td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%lld</td><td>%lld</td>"
                "<td>%lld</td></tr>\n",
                sim_mode_name((sim_mode)m), (long long)(r->capacity_milli / GP_MILLI), r->alloc_pct,
                r->delay_p50, r->delay_p95, r->delay_p99, r->jct_p50, r->jct_p95,
                (long long)r->evictions, (long long)r->unserved, (long long)r->rejected);
    }
    fputs("</table>\n", f);
}

static void project_tables(FILE *f, const sim_plan *p) {
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        const sim_replay_result *r = &p->modes[m].full;
        fprintf(f,
                "<h3>%s</h3>\n<table><tr><th>project</th><th>deserved GPUs</th>"
                "<th>mean GPUs</th><th>share of deserved</th><th>jobs</th>"
                "<th>delay p95 (s)</th></tr>\n",
                sim_mode_name((sim_mode)m));
        for (size_t i = 0; i < r->nprojects; i++) {
            const sim_project_result *q = &r->projects[i];
            fputs("<tr><td>", f);
            esc(f, q->name);
            fprintf(f,
                    "</td><td>%.2f</td><td>%.2f</td><td>%.0f%%</td><td>%lld</td>"
                    "<td>%.0f</td></tr>\n",
                    q->deserved_gpus, q->mean_gpus, 100 * q->share, (long long)q->jobs,
                    q->delay_p95);
        }
        fputs("</table>\n", f);
    }
}

/* Horizontal bars: GPUs each mode needs, against the given hardware. */
static void needed_chart(FILE *f, const sim_plan *p) {
    double max = (double)p->gpus;
    for (int m = 0; m < SIM_MODE_COUNT; m++)
        max = fmax(max, p->modes[m].found ? (double)p->modes[m].gpus_needed
                                          : (double)p->gpus * SIM_PLAN_MAX_GROWTH);
    fputs("<h2>GPUs needed to keep p95 queueing delay under the target</h2>\n", f);
    fprintf(f,
            "<svg viewBox='0 0 %.0f 150' width='%.0f' "
            "height='150'>\n",
            W, W);
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        const sim_plan_mode *pm = &p->modes[m];
        double g = pm->found ? (double)pm->gpus_needed : (double)p->gpus * SIM_PLAN_MAX_GROWTH;
        double len = max > 0 ? g / max * (W - 260) : 0, y = 15 + 42.0 * m;
        fprintf(f, "<text x='150' y='%.0f' text-anchor='end' class='l'>%s</text>\n", y + 19,
                sim_mode_name((sim_mode)m));
        fprintf(f, "<rect x='160' y='%.0f' width='%.1f' height='28' fill='%s'/>\n", y, len,
                colour[m]);
        if (pm->found)
            fprintf(f, "<text x='%.1f' y='%.0f' class='l'>%lld GPUs</text>\n", 166 + len, y + 19,
                    (long long)pm->gpus_needed);
        else
            fprintf(f,
                    "<text x='%.1f' y='%.0f' text-anchor='end' class='l' fill='#fff'>"
                    "more than %lld GPUs</text>\n",
                    154 + len, y + 19, (long long)p->gpus * SIM_PLAN_MAX_GROWTH);
    }
    fputs("</svg>\n", f);
}

int sim_plan_html(const sim_plan *p, const sim_inputs *in, FILE *f) {
    fputs("<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>\n"
          "<title>gpupool capacity plan</title>\n<style>\n"
          "body{font-family:sans-serif;margin:2em;max-width:960px;color:#222}\n"
          "table{border-collapse:collapse;margin:.5em 0 1.5em}\n"
          "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\n"
          "td:first-child,th:first-child{text-align:left}\n"
          ".t{font-size:11px;fill:#444}.l{font-size:13px;fill:#222}\n"
          ".headline{font-size:1.4em;font-weight:bold;margin:1em 0}\n"
          "</style></head><body>\n<h1>gpupool capacity plan</h1>\n<p>",
          f);
    fprintf(f, "%zu jobs from <code>", in->njobs);
    esc(f, in->pods_path);
    fprintf(f, "</code> on %zu nodes (%lld GPUs) from <code>", p->nnodes, (long long)p->gpus);
    esc(f, in->nodes_path);
    fprintf(f, "</code>. Target: p95 queueing delay at most %.0f s, every job served.</p>\n",
            p->target_p95_s);
    fputs("<p class='headline'>", f);
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        const sim_plan_mode *pm = &p->modes[m];
        if (pm->found)
            fprintf(f, "%s%s needs %lld GPUs", m ? "; " : "", sim_mode_name((sim_mode)m),
                    (long long)pm->gpus_needed);
        else
            fprintf(f, "%s%s needs more than %lld GPUs", m ? "; " : "", sim_mode_name((sim_mode)m),
                    (long long)p->gpus * SIM_PLAN_MAX_GROWTH);
    }
    fputs(".</p>\n", f);
    needed_chart(f, p);

    double *buf = malloc((size_t)SIM_MODE_COUNT * 2 * BINS * sizeof *buf);
    size_t cap = 0;
    for (int m = 0; m < SIM_MODE_COUNT; m++)
        cap += p->modes[m].full.jobs;
    double *cdf = malloc((2 * cap + 2 * SIM_MODE_COUNT) * sizeof *cdf);
    if (!buf || !cdf) {
        free(buf);
        free(cdf);
        return GP_ENOMEM;
    }
    line ls[SIM_MODE_COUNT];
    int64_t t0 = p->modes[0].full.t0, t1 = p->modes[0].full.t1;
    for (int m = 1; m < SIM_MODE_COUNT; m++) {
        t0 = p->modes[m].full.t0 < t0 ? p->modes[m].full.t0 : t0;
        t1 = p->modes[m].full.t1 > t1 ? p->modes[m].full.t1 : t1;
    }
    const char *unit_name;
    double unit = time_unit(t1 - t0, &unit_name);
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        double *x = buf + (size_t)m * 2 * BINS, *y = x + BINS;
        alloc_bins(&p->modes[m].full, t0, t1, unit, x, y);
        ls[m] = (line){x, y, BINS, colour[m], sim_mode_name((sim_mode)m)};
    }
    chart(f, "GPU allocation over time (given hardware)", ls, SIM_MODE_COUNT, 0, unit_name,
          "allocated GPUs, % of the pool", 1);

    /* Delay CDFs: x is log10 of the delay in seconds, delays under one
     * second drawn at 1 s. */
    double *c = cdf;
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        const sim_replay_result *r = &p->modes[m].full;
        size_t n = 0, nd = (size_t)(r->jobs - r->rejected);
        double *x = c, *y = c + (nd ? nd : 1);
        for (size_t i = 0; i < nd; i++) {
            if (i + 1 < nd && r->delays[i + 1] == r->delays[i])
                continue;
            x[n] = log10(fmax(r->delays[i], 1.0));
            y[n++] = 100.0 * (double)(i + 1) / (double)nd;
        }
        ls[m] = (line){x, y, n, colour[m], sim_mode_name((sim_mode)m)};
        c += 2 * (nd ? nd : 1);
    }
    chart(f, "Queueing delay, cumulative distribution (given hardware)", ls, SIM_MODE_COUNT, 1,
          "queueing delay, seconds (log scale)", "jobs started within, %", 100);
    free(buf);
    free(cdf);

    fputs("<h2>The three modes on the given hardware</h2>\n", f);
    summary_table(f, p, 0);
    fputs("<h2>At the size each mode needs</h2>\n", f);
    summary_table(f, p, 1);
    fputs("<h2>Per project: mean GPUs held against deserved quota</h2>\n", f);
    project_tables(f, p);
    fprintf(f, "<p>Computed by gpupool-sim plan in %.1f s.</p>\n</body></html>\n", p->seconds);
    return 0;
}
