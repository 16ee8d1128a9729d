/*
 * cmd-usage.c — the measuring commands. `gpupool usage`: GPU-hours
 * allocated, used, idle while allocated, borrowed, lent and returned to the
 * pool by the idle policy (sched-idle.c) per queue, user
 * or node over a period, from GET /api/v1/usage; a table for people, --json
 * for scripts and --csv for chargeback spreadsheets (one line per key, the
 * period in each line; by queue, each queue's parent, so that a department's
 * line, which includes its projects', is not added to theirs). --price adds
 * the cost of the allocated GPU-hours. `gpupool export`: the pool's own history as the
 * files gpupool-sim plan reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/units.h"

#define FLAG(name) (v = cli_flag(argc, argv, &i, name, &missing))

/* A value that can go into the query as it is. */
static int plain(const char *s) {
    for (; *s; s++)
        if (!strchr("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ:.-_", *s))
            return 0;
    return 1;
}

static void num(json_t *v, char *buf, size_t len, const char *unknown) {
    if (json_is_number(v))
        snprintf(buf, len, "%.3f", json_number_value(v));
    else
        snprintf(buf, len, "%s", unknown);
}

/* The cost of v allocated GPU-hours at price thousandths per GPU-hour, to the
 * cent; "" where v is unknown. */
static void cost(json_t *v, int64_t price, char *buf, size_t len) {
    if (json_is_number(v))
        snprintf(buf, len, "%.2f", json_number_value(v) * (double)price / 1000.0);
    else
        snprintf(buf, len, "%s", "");
}

static void iso(int64_t s, char *buf, size_t len) {
    time_t t = (time_t)s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *const fields[] = {"allocated_gpu_hours", "used_gpu_hours",     "idle_gpu_hours",
                                     "used_percent",        "borrowed_gpu_hours", "lent_gpu_hours",
                                     "returned_gpu_hours"};
#define NFIELDS (sizeof fields / sizeof fields[0])

int cmd_usage(cli *c, int argc, char **argv) {
    const char *from = NULL, *to = NULL, *step = NULL, *by = "queue", *price_text = NULL, *v;
    int i, missing = 0, csv = 0;
    for (i = 1; i < argc; i++)
        if (FLAG("--from"))
            from = v;
        else if (FLAG("--price"))
            price_text = v;
        else if (FLAG("--to"))
            to = v;
        else if (FLAG("--step"))
            step = v;
        else if (FLAG("--by"))
            by = v;
        else if (missing)
            return cli_usage("usage", "%s needs a value", argv[i]);
        else if (strcmp(argv[i], "--csv") == 0)
            csv = 1;
        else
            return cli_usage("usage", "unknown argument \"%s\"", argv[i]);
    /* The step is a duration for the one strict parser, here as on the
     * server, and goes out as that parser prints it back. */
    char stepbuf[48];
    if (step) {
        int64_t ms;
        int rc = cli_parse_duration("usage", "--step", step, &ms);
        if (rc != EXIT_OK)
            return rc;
        if (ms < 60000)
            return cli_usage("usage", "--step: %s is shorter than a minute", step);
        gp_format_duration(ms, stepbuf, sizeof stepbuf);
        step = stepbuf;
    }
    /* The price of one allocated GPU-hour, in thousandths (exact). */
    int64_t price = -1;
    if (price_text) {
        int rc = cli_parse_milli("usage", "--price", price_text, "per GPU-hour", 0,
                                 INT64_C(1000000000000), &price);
        if (rc != EXIT_OK)
            return rc;
    }
    const char *vals[] = {from, to, step, by};
    const char *names[] = {"from", "to", "step", "by"};
    char path[512];
    int n = snprintf(path, sizeof path, "/api/v1/usage?");
    for (int k = 0; k < 4; k++) {
        if (!vals[k])
            continue;
        if (!plain(vals[k]) || strlen(vals[k]) > 64)
            return cli_usage("usage", "--%s: \"%s\" is not a time, duration or name", names[k],
                             vals[k]);
        n += snprintf(path + n, sizeof path - (size_t)n, "%s=%s&", names[k], vals[k]);
    }
    json_t *out;
    int rc = cli_get_listing(c, path, &out);
    if (rc != EXIT_OK || !out)
        return rc;
    char f[32], t[32];
    iso(json_integer_value(json_object_get(out, "from")), f, sizeof f);
    iso(json_integer_value(json_object_get(out, "to")), t, sizeof t);
    size_t k;
    json_t *q;
    int queues = strcmp(cli_str(out, "by"), "queue") == 0;
    if (csv) {
        printf("from,to,%s%s", cli_str(out, "by"), queues ? ",parent" : "");
        for (size_t x = 0; x < NFIELDS; x++)
            printf(",%s", fields[x]);
        printf("%s\n", price >= 0 ? ",cost" : "");
        json_array_foreach(json_object_get(out, "keys"), k, q) {
            /* Keys are names checked by the daemon: no commas or quotes. */
            printf("%s,%s,%s", f, t, cli_str(q, "key"));
            if (queues)
                printf(",%s", cli_str(q, "parent"));
            for (size_t x = 0; x < NFIELDS; x++) {
                char b[32];
                num(json_object_get(q, fields[x]), b, sizeof b, "");
                printf(",%s", b);
            }
            if (price >= 0) {
                char b[48];
                cost(json_object_get(q, fields[0]), price, b, sizeof b);
                printf(",%s", b);
            }
            printf("\n");
        }
        json_decref(out);
        return EXIT_OK;
    }
    static const char *const figs[NFIELDS] = {"ALLOCATED-GPU-H", "USED-GPU-H",     "IDLE-GPU-H",
                                              "USED%",           "BORROWED-GPU-H", "LENT-GPU-H",
                                              "RETURNED-GPU-H"};
    const char *head[NFIELDS + 3];
    int ncols = 0;
    head[ncols++] = "KEY";
    if (queues)
        head[ncols++] = "PARENT";
    for (size_t x = 0; x < NFIELDS; x++)
        head[ncols++] = figs[x];
    if (price >= 0)
        head[ncols++] = "COST";
    cli_table tb;
    cli_table_init(&tb, ncols, head);
    json_array_foreach(json_object_get(out, "keys"), k, q) {
        char cells[NFIELDS + 1][48];
        const char *row[NFIELDS + 3];
        int col = 0;
        row[col++] = cli_str(q, "key");
        if (queues)
            row[col++] = cli_str(q, "parent")[0] ? cli_str(q, "parent") : "-";
        for (size_t x = 0; x < NFIELDS; x++) {
            num(json_object_get(q, fields[x]), cells[x], sizeof cells[x], "-");
            row[col++] = cells[x];
        }
        if (price >= 0) {
            cost(json_object_get(q, fields[0]), price, cells[NFIELDS], sizeof cells[NFIELDS]);
            row[col++] = cells[NFIELDS];
        }
        cli_table_add(&tb, row);
    }
    printf("GPU-hours by %s from %s to %s\n", cli_str(out, "by"), f, t);
    cli_table_print(&tb);
    if (cli_str(out, "note")[0])
        printf("note: %s\n", cli_str(out, "note"));
    json_decref(out);
    return EXIT_OK;
}

int cmd_export(cli *c, int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "", *from = NULL, *to = NULL, *v;
    int i, missing = 0;
    if (strcmp(what, "workloads") != 0 && strcmp(what, "nodes") != 0 &&
        strcmp(what, "projects") != 0)
        return cli_usage("export", "export what? workloads, nodes or projects");
    for (i = 2; i < argc; i++) {
        if (FLAG("--from"))
            from = v;
        else if (FLAG("--to"))
            to = v;
        else
            return cli_usage("export", missing ? "%s needs a value" : "unknown argument \"%s\"",
                             argv[i]);
    }
    char path[256];
    int n = snprintf(path, sizeof path, "/api/v1/export/%s?", what);
    const char *vals[] = {from, to}, *names[] = {"from", "to"};
    for (int k = 0; k < 2; k++) {
        if (!vals[k])
            continue;
        if (!plain(vals[k]) || strlen(vals[k]) > 64)
            return cli_usage("export", "--%s: \"%s\" is not a time", names[k], vals[k]);
        n += snprintf(path + n, sizeof path - (size_t)n, "%s=%s&", names[k], vals[k]);
    }
    char *raw = NULL;
    size_t len = 0;
    int rc = cli_call(c, "GET", path, NULL, NULL, &raw, &len);
    if (rc == EXIT_OK && raw)
        fwrite(raw, 1, len, stdout);
    free(raw);
    return rc;
}
