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
    static const char special[] = "<>&\"'";
    static const char *const entity[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&#39;"};
    for (; *s; s++) {
        const char *c = strchr(special, *s);
        if (c != NULL)
            fputs(entity[c - special], f);
        else
            fputc(*s, f);
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

/* GPUs allocated in BINS equal time bins over [t0, t1] (time-weighted
 * means of the step function in r->series), x in units of `unit` seconds
 * since t0. */
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
        y[b] = area / w / GP_MILLI;
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

/* A share as people read it: "<1%" rather than a misleading "0%". */
static void share_text(double share, char *buf, size_t len) {
    if (share > 0 && share < 0.01)
        snprintf(buf, len, "&lt;1%%");
    else
        snprintf(buf, len, "%.0f%%", 100 * share);
}

/* Per project at the size each mode needs (deserved quotas are shares of
 * that pool, not of the hardware the trace came from). */
static void project_tables(FILE *f, const sim_plan *p) {
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        if (!p->modes[m].found)
            continue;
        const sim_replay_result *r = &p->modes[m].needed;
        fprintf(f,
                "<h3>%s, %lld GPUs</h3>\n<table><tr><th>project</th><th>deserved GPUs</th>"
                "<th>mean GPUs held</th><th>held / deserved</th><th>jobs</th>"
                "<th>delay p95 (s)</th></tr>\n",
                sim_mode_name((sim_mode)m), (long long)p->modes[m].gpus_needed);
        for (size_t i = 0; i < r->nprojects; i++) {
            const sim_project_result *q = &r->projects[i];
            char share[16];
            share_text(q->share, share, sizeof share);
            fputs("<tr><td>", f);
            esc(f, q->name);
            fprintf(f,
                    "</td><td>%.1f</td><td>%.2f</td><td>%s</td><td>%lld</td>"
                    "<td>%.0f</td></tr>\n",
                    q->deserved_gpus, q->mean_gpus, share, (long long)q->jobs, q->delay_p95);
        }
        fputs("</table>\n", f);
    }
}

/* Horizontal bars: GPUs each mode needs, against the given hardware. */
static void needed_chart(FILE *f, const sim_plan *p) {
    /* The bars are scaled to the largest need, not to the trace's hardware,
     * which may be far larger than any mode needs. */
    double max = 0;
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

/* What each mode means, in one sentence for a reader who is not an
 * engineer. */
static const char *const meaning[SIM_MODE_COUNT] = {
    "Each project owns a fixed set of GPUs (its share of the pool) that nobody else may use, "
    "even while they sit idle.",
    "All projects share one pool: each keeps its share as a guarantee and borrows GPUs others "
    "leave idle, which are handed back when their owner needs them.",
    "As pooled, and a workload that needs only part of a GPU gets only that part, so several "
    "workloads share one GPU."};

/* An amount of money with thousands separators, after the currency. */
static void money(FILE *f, const sim_plan *p, double v) {
    char digits[32], out[64];
    snprintf(digits, sizeof digits, "%.0f", fabs(v));
    size_t n = strlen(digits), k = 0;
    if (v < 0)
        out[k++] = '-';
    for (size_t i = 0; i < n && k < sizeof out - 2; i++) {
        if (i && (n - i) % 3 == 0)
            out[k++] = ',';
        out[k++] = digits[i];
    }
    out[k] = '\0';
    if (p->currency[0]) {
        esc(f, p->currency);
        fputc(' ', f);
    }
    fputs(out, f);
}

/* What GPUS GPUs cost, between BEFORE and AFTER; nothing where no price was
 * given. */
static void cost(FILE *f, const sim_plan *p, int64_t gpus, const char *before, const char *after) {
    if (p->price_per_gpu <= 0)
        return;
    fputs(before, f);
    money(f, p, (double)gpus * p->price_per_gpu);
    fputs(after, f);
}

/* How many GPUs fewer mode b needs than mode a, where both met the target;
 * else 0. */
static int64_t fewer_gpus(const sim_plan_mode *a, const sim_plan_mode *b) {
    if (!a->found || !b->found || a->gpus_needed <= b->gpus_needed)
        return 0;
    return a->gpus_needed - b->gpus_needed;
}

/* A sentence on n GPUs saved: n between LEAD and TAIL, then what they cost
 * between BEFORE and AFTER (see cost), and a full stop. */
static void saving(FILE *f, const sim_plan *p, int64_t n, const char *lead, const char *tail,
                   const char *before, const char *after) {
    fprintf(f, "%s%lld%s", lead, (long long)n, tail);
    cost(f, p, n, before, after);
    fputs(".", f);
}

/* The answer first: GPUs and money per mode, in sentences and a table. */
static void answer(FILE *f, const sim_plan *p) {
    const sim_plan_mode *st = &p->modes[SIM_MODE_STATIC], *po = &p->modes[SIM_MODE_POOLED],
                        *fr = &p->modes[SIM_MODE_FRACTIONAL];
    int64_t pooling = fewer_gpus(st, po), fractions = fewer_gpus(po, fr);
    fputs("<p class='headline'>", f);
    if (pooling > 0)
        saving(f, p, pooling, "Pooling needs ",
               " fewer GPUs than static ownership for the same wait", ": ", " not spent");
    else if (st->found && po->found)
        fputs("On this history pooling needs no fewer GPUs than static ownership.", f);
    else
        fputs("Not every mode met the target within the sizes tried (see below).", f);
    if (fractions > 0)
        saving(f, p, fractions, " Sharing GPUs in fractions saves ", " more", " (", ")");
    fputs("</p>\n<table><tr><th>mode</th><th class='words'>what it means</th><th>GPUs needed</th>",
          f);
    if (p->price_per_gpu > 0)
        fputs("<th>cost</th>", f);
    fputs("<th>GPUs busy with work there</th><th>wait p95</th></tr>\n", f);
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        const sim_plan_mode *pm = &p->modes[m];
        fprintf(f, "<tr><td>%s</td><td class='words'>%s</td>", sim_mode_name((sim_mode)m),
                meaning[m]);
        if (!pm->found) {
            fprintf(f, "<td>more than %lld</td>%s<td>-</td><td>-</td></tr>\n",
                    (long long)p->gpus * SIM_PLAN_MAX_GROWTH,
                    p->price_per_gpu > 0 ? "<td>-</td>" : "");
            continue;
        }
        fprintf(f, "<td>%lld</td>", (long long)pm->gpus_needed);
        cost(f, p, pm->gpus_needed, "<td>", "</td>");
        fprintf(f, "<td>%.0f%%</td><td>%.0f s</td></tr>\n", pm->needed.alloc_pct,
                pm->needed.delay_p95);
    }
    fputs("</table>\n", f);
    fprintf(f,
            "<p>Utilisation: on the trace's own hardware (%lld GPUs) work would hold "
            "%.1f%% (static), %.1f%% (pooled) and %.1f%% (pooled-fractional) of the GPUs; "
            "at the sizes above it holds the share in the table.%s</p>\n",
            (long long)p->gpus, st->full.alloc_pct, po->full.alloc_pct, fr->full.alloc_pct,
            p->price_per_gpu > 0 ? ""
                                 : " Give <code>--price-per-gpu</code> to see what each costs.");
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
          "td.words,th.words{text-align:left}\n"
          "</style></head><body>\n<h1>gpupool capacity plan</h1>\n<p>",
          f);
    fprintf(f, "How many GPUs does this organisation need? %zu jobs from <code>", in->njobs);
    esc(f, in->pods_path);
    fprintf(f, "</code> replayed on pools of the node types in <code>");
    esc(f, in->nodes_path);
    fprintf(f,
            "</code>, each mode at the smallest size where 95%% of jobs start within "
            "%.0f s and every job is served.</p>\n",
            p->target_p95_s);
    answer(f, p);
    needed_chart(f, p);

    size_t cap = 0;
    for (int m = 0; m < SIM_MODE_COUNT; m++)
        cap += (size_t)p->modes[m].needed.jobs;
    double *buf = malloc((size_t)SIM_MODE_COUNT * 2 * BINS * sizeof *buf);
    double *cdf = malloc((2 * cap + 2 * SIM_MODE_COUNT) * sizeof *cdf);
    if (!buf || !cdf) {
        free(buf);
        free(cdf);
        return GP_ENOMEM;
    }
    /* Allocation over time at the size each mode needs, in GPUs: the axis
     * fits what work held, not the trace's hardware or the pools' size. */
    line ls[SIM_MODE_COUNT];
    size_t nl = 0;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    double maxdelay = 0, p99 = 0;
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        const sim_plan_mode *pm = &p->modes[m];
        if (!pm->found)
            continue;
        t0 = pm->needed.t0 < t0 ? pm->needed.t0 : t0;
        t1 = pm->needed.t1 > t1 ? pm->needed.t1 : t1;
        p99 = fmax(p99, pm->needed.delay_p99);
        size_t nd = (size_t)(pm->needed.jobs - pm->needed.rejected);
        if (nd)
            maxdelay = fmax(maxdelay, pm->needed.delays[nd - 1]);
    }
    const char *unit_name = "";
    double unit = t1 > t0 ? time_unit(t1 - t0, &unit_name) : 1;
    for (int m = 0; m < SIM_MODE_COUNT && t1 > t0; m++) {
        if (!p->modes[m].found)
            continue;
        double *x = buf + (size_t)m * 2 * BINS, *y = x + BINS;
        alloc_bins(&p->modes[m].needed, t0, t1, unit, x, y);
        ls[nl++] = (line){x, y, BINS, colour[m], sim_mode_name((sim_mode)m)};
    }
    if (nl)
        chart(f, "GPUs held by work over time, at the size each mode needs", ls, nl, 0, unit_name,
              "GPUs allocated", 1);

    /* Waiting: the distribution at those sizes, unless (almost) nobody
     * waited, where a chart would be a flat line at 100 %. */
    if (nl && p99 < 1) {
        fprintf(f,
                "<h2>Waiting</h2>\n<p>At these sizes at least 99%% of jobs started as soon as "
                "they arrived, in every mode; the longest wait was %.0f s.</p>\n",
                maxdelay);
    } else if (nl) {
        double *c = cdf;
        nl = 0;
        for (int m = 0; m < SIM_MODE_COUNT; m++) {
            if (!p->modes[m].found)
                continue;
            const sim_replay_result *r = &p->modes[m].needed;
            size_t n = 0, nd = (size_t)(r->jobs - r->rejected);
            double *x = c, *y = c + (nd ? nd : 1);
            for (size_t i = 0; i < nd; i++) {
                if (i + 1 < nd && r->delays[i + 1] == r->delays[i])
                    continue;
                x[n] = log10(fmax(r->delays[i], 1.0));
                y[n++] = 100.0 * (double)(i + 1) / (double)nd;
            }
            ls[nl++] = (line){x, y, n, colour[m], sim_mode_name((sim_mode)m)};
            c += 2 * (nd ? nd : 1);
        }
        chart(f, "How long jobs wait to start, at the size each mode needs", ls, nl, 1,
              "waiting time, seconds (log scale)", "jobs started within, %", 100);
    }
    free(buf);
    free(cdf);

    fputs("<h2>Details: at the size each mode needs</h2>\n", f);
    summary_table(f, p, 1);
    fprintf(f, "<h2>Details: on the trace's own hardware (%lld GPUs)</h2>\n", (long long)p->gpus);
    summary_table(f, p, 0);
    fputs("<h2>Per project: GPUs held against deserved quota</h2>\n", f);
    project_tables(f, p);
    fprintf(f, "<p>Computed by gpupool-sim plan in %.1f s.</p>\n</body></html>\n", p->seconds);
    return 0;
}
