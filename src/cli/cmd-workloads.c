/*
 * cmd-workloads.c — the workload commands of gpupool: submit, list,
 * describe, logs, and delete / suspend / resume.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/gp_submit.h"
#include "common/units.h"

#define FLAG(name) (v = cli_flag(argc, argv, &i, name, &missing))

/* The field whose flag argv[*i] is (its value in *v, *i moved past it), or
 * NULL; *missing is set for a flag without its value. */
static const gp_field *submit_field(int argc, char **argv, int *i, const char **v, int *missing) {
    for (int k = 0; k < GP_SUBMIT_NFIELDS; k++) {
        const gp_field *f = &gp_submit_fields[k];
        if (f->flag == NULL)
            continue;
        if (f->type == GP_SUBMIT_TRUE || f->type == GP_SUBMIT_FALSE) {
            if (strcmp(argv[*i], f->flag) == 0)
                return f;
        } else if ((*v = cli_flag(argc, argv, i, f->flag, missing)) != NULL || *missing) {
            return f;
        }
    }
    return NULL;
}

/* Builds the request body of submit into b from the command line, every
 * flag as GP_SUBMIT_FIELDS (common/gp_submit.h) describes it (the caller
 * owns b, also on failure). Returns an exit code. */
int cli_submit_body(const char *what, int argc, char **argv, json_t *b) {
    int i, missing = 0, ngpu = 0;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "--") == 0)
            break;
        const gp_field *f = submit_field(argc, argv, &i, &v, &missing);
        if (missing)
            return cli_usage(what, "%s needs a value", a);
        if (f == NULL)
            return cli_usage(what, "unknown option %s (the command goes after --)", a);
        ngpu += f == &gp_submit_fields[GP_SUBMIT_F_gpu] ||
                f == &gp_submit_fields[GP_SUBMIT_F_gpu_memory] ||
                f == &gp_submit_fields[GP_SUBMIT_F_mig];
        int rc = cli_field_flag(what, b, f, v);
        if (rc != EXIT_OK)
            return rc;
        /* What only --gpu knows: above 1, whole GPUs. */
        int64_t m;
        if (f == &gp_submit_fields[GP_SUBMIT_F_gpu] && gp_parse_milli(v, &m) == 0 && m > 1000 &&
            m % 1000 != 0)
            return cli_usage(what, "--gpu: %s is neither a fraction below 1 nor whole GPUs", v);
    }
    if (!json_object_get(b, "project"))
        return cli_usage(what, "--project is required");
    if (ngpu > 1)
        return cli_usage(what, "give only one of --gpu, --gpu-memory, --mig");
    if (i >= argc - 1)
        return cli_usage(what, "the command to run goes after --");
    json_t *cmd = json_array();
    for (i++; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    json_object_set_new(b, "command", cmd);
    char cwd[PATH_MAX];
    if (!json_object_get(b, "workdir") && getcwd(cwd, sizeof cwd))
        json_object_set_new(b, "workdir", json_string(cwd));
    return EXIT_OK;
}

int cmd_submit(cli *c, int argc, char **argv) {
    json_t *b = json_object(), *out;
    int rc = cli_submit_body("submit", argc, argv, b);
    if (rc == EXIT_OK)
        rc = cli_call(c, "POST", "/api/v1/workloads", b, &out, NULL, NULL);
    json_decref(b);
    if (rc != EXIT_OK)
        return rc;
    if (c->json)
        cli_print_json(out);
    else
        printf("workload %lld submitted\n",
               (long long)json_integer_value(json_object_get(out, "id")));
    json_decref(out);
    return EXIT_OK;
}

/* Appends "&key=value" to a query string (values are names: no escaping). */
static void add_query(char *q, size_t len, const char *key, const char *v) {
    size_t n = strlen(q);
    snprintf(q + n, len - n, "%s%s=%s", n ? "&" : "?", key, v);
}

int cmd_list(cli *c, int argc, char **argv) {
    char q[1024] = "";
    int64_t x;
    int missing = 0, all = 0;
    const char *v;
    for (int i = 1; i < argc; i++) {
        if (FLAG("--project"))
            add_query(q, sizeof q, "project", v);
        else if (FLAG("--state"))
            add_query(q, sizeof q, "state", v);
        else if (FLAG("--user"))
            add_query(q, sizeof q, "user", v);
        else if (FLAG("--limit")) {
            if (cli_parse_int("list", "--limit", v, 1, INT64_MAX, &x) != EXIT_OK)
                return EXIT_USAGE;
            add_query(q, sizeof q, "limit", v);
        } else if (FLAG("--after")) {
            if (cli_parse_int("list", "--after", v, 0, INT64_MAX, &x) != EXIT_OK)
                return EXIT_USAGE;
            add_query(q, sizeof q, "after", v);
        } else if (FLAG("--sort"))
            add_query(q, sizeof q, "order", v);
        else if (FLAG("--cursor"))
            add_query(q, sizeof q, "cursor", v);
        else if (strcmp(argv[i], "--all") == 0)
            all = 1;
        else
            return cli_usage("list", missing ? "%s needs a value" : "unknown argument %s", argv[i]);
    }
    /* Without --state or --all, people see what is still going on. */
    if (!all && !strstr(q, "state="))
        add_query(q, sizeof q, "state", "active");
    char path[1200];
    snprintf(path, sizeof path, "/api/v1/workloads%s", q);
    json_t *out;
    int rc = cli_get_listing(c, path, &out);
    if (rc != EXIT_OK || !out)
        return rc;
    static const char *const head[] = {"ID",    "NAME",    "PROJECT", "USER",
                                       "STATE", "REQUEST", "AGE",     "INFO"};
    cli_table t;
    cli_table_init(&t, 8, head);
    size_t k;
    json_t *w;
    json_array_foreach(json_object_get(out, "workloads"), k, w) {
        char id[32], age[32];
        snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(w, "id")));
        cli_age(json_integer_value(json_object_get(w, "submitted_ms")), age, sizeof age);
        const char *info = json_object_get(w, "pending_reason") ? cli_str(w, "pending_reason")
                                                                : cli_str(w, "reason");
        const char *row[] = {id,
                             cli_str(w, "name"),
                             cli_str(w, "project"),
                             cli_str(w, "user"),
                             cli_str(w, "state"),
                             cli_str(w, "request"),
                             age,
                             info};
        cli_table_add(&t, row);
    }
    cli_table_print(&t);
    if (json_object_get(out, "next_after"))
        printf("(more: --after %lld)\n",
               (long long)json_integer_value(json_object_get(out, "next_after")));
    else if (json_object_get(out, "next_cursor"))
        printf("(more: --cursor %s)\n", cli_str(out, "next_cursor"));
    json_decref(out);
    return EXIT_OK;
}

static void print_time(const char *label, json_int_t ms) {
    if (ms <= 0)
        return;
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char b[64];
    localtime_r(&t, &tm);
    strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S", &tm);
    printf("%-15s %s\n", label, b);
}

int cmd_describe(cli *c, int argc, char **argv) {
    const char *id = NULL;
    int64_t num;
    for (int i = 1; i < argc; i++)
        if (!id && cli_parse_int("describe", "workload id", argv[i], 1, INT64_MAX, &num) != 0)
            return EXIT_USAGE;
        else if (!id)
            id = argv[i];
        else
            return cli_usage("describe", "one workload id at a time");
    if (!id)
        return cli_usage("describe", "which workload? (gpupool describe ID)");
    char path[256];
    json_t *w, *ev;
    snprintf(path, sizeof path, "/api/v1/workloads/%s", id);
    int rc = cli_call(c, "GET", path, NULL, &w, NULL, NULL);
    if (rc != EXIT_OK)
        return rc;
    snprintf(path, sizeof path, "/api/v1/workloads/%s/events", id);
    if ((rc = cli_call(c, "GET", path, NULL, &ev, NULL, NULL)) != EXIT_OK) {
        json_decref(w);
        return rc;
    }
    if (c->json) {
        json_object_set(w, "events", json_object_get(ev, "events"));
        cli_print_json(w);
    } else {
        printf("%-15s %lld\n",
               "Workload:", (long long)json_integer_value(json_object_get(w, "id")));
        if (*cli_str(w, "name"))
            printf("%-15s %s\n", "Name:", cli_str(w, "name"));
        printf("%-15s %s\n%-15s %s\n%-15s %s\n%-15s %s\n", "Project:", cli_str(w, "project"),
               "User:", cli_str(w, "user"), "State:", cli_str(w, "state"),
               "Request:", cli_str(w, "request"));
        printf("%-15s %lld\n",
               "Attempt:", (long long)json_integer_value(json_object_get(w, "attempt")));
        print_time("Submitted:", json_integer_value(json_object_get(w, "submitted_ms")));
        if (json_object_get(w, "pending_reason"))
            printf("%-15s %s\n", "Waiting:", cli_str(w, "pending_reason"));
        if (*cli_str(w, "reason"))
            printf("%-15s %s\n", "Reason:", cli_str(w, "reason"));
        const char *mode = cli_str(json_object_get(w, "spec"), "on_preempt");
        if (*mode)
            printf("%-15s %s\n", "On preempt:", mode);
        json_t *cmd = json_object_get(json_object_get(w, "spec"), "command");
        if (cmd) {
            printf("%-15s", "Command:");
            size_t k;
            json_t *a;
            json_array_foreach(cmd, k, a) {
                char *shown = cli_visible(json_string_value(a) ? json_string_value(a) : "");
                printf(" %s", shown ? shown : "");
                free(shown);
            }
            putchar('\n');
        }
        size_t k;
        json_t *x;
        json_array_foreach(json_object_get(w, "tasks"), k, x) {
            char label[32];
            snprintf(label, sizeof label,
                     "Task %lld:", (long long)json_integer_value(json_object_get(x, "task")));
            /* Its GPUs, from the binding's slices [gpu, milli, mem, mig]: a
             * whole GPU by its index, a fraction with its share. */
            char gpus[256] = "";
            size_t used = 0, g;
            json_t *sl;
            json_array_foreach(json_object_get(x, "slices"), g, sl) {
                long long gi = (long long)json_integer_value(json_array_get(sl, 0));
                long long milli = (long long)json_integer_value(json_array_get(sl, 1));
                int n =
                    milli > 0 && milli < 1000
                        ? snprintf(gpus + used, sizeof gpus - used, "%s%lld (%g of it)",
                                   g ? ", " : "", gi, (double)milli / 1000.0)
                        : snprintf(gpus + used, sizeof gpus - used, "%s%lld", g ? ", " : "", gi);
                if (n < 0 || (size_t)n >= sizeof gpus - used)
                    break;
                used += (size_t)n;
            }
            printf("%-15s node %s, %s%s%shandle %s\n", label, cli_str(x, "node"),
                   *gpus ? (json_array_size(json_object_get(x, "slices")) > 1 ? "GPUs " : "GPU ")
                         : "",
                   gpus, *gpus ? ", " : "", cli_str(x, "handle"));
        }
        printf("\nAttempts:\n");
        json_array_foreach(json_object_get(w, "attempts"), k, x) {
            printf("  #%lld %-10s %s%s%s\n",
                   (long long)json_integer_value(json_object_get(x, "attempt")),
                   cli_str(x, "outcome"), cli_str(x, "node"), *cli_str(x, "reason") ? ": " : "",
                   cli_str(x, "reason"));
        }
        printf("\nEvents:\n");
        json_array_foreach(json_object_get(ev, "events"), k, x) {
            char age[32];
            cli_age(json_integer_value(json_object_get(x, "ts_ms")), age, sizeof age);
            printf("  %6s ago  %-18s %s\n", age, cli_str(x, "kind"), cli_str(x, "message"));
        }
    }
    json_decref(w);
    json_decref(ev);
    return EXIT_OK;
}

int cmd_logs(cli *c, int argc, char **argv) {
    const char *id = NULL, *task = "0", *v;
    int64_t x;
    int follow = 0, missing = 0;
    for (int i = 1; i < argc; i++) {
        if (FLAG("--task")) {
            if (cli_parse_int("logs", "--task", v, 0, 255, &x) != EXIT_OK)
                return EXIT_USAGE;
            task = v;
        } else if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0)
            follow = 1;
        else if (missing)
            return cli_usage("logs", "%s needs a value", argv[i]);
        else if (!id && argv[i][0] != '-') {
            if (cli_parse_int("logs", "workload id", argv[i], 1, INT64_MAX, &x) != EXIT_OK)
                return EXIT_USAGE;
            id = argv[i];
        } else
            return cli_usage("logs", "unknown argument %s", argv[i]);
    }
    if (!id)
        return cli_usage("logs", "which workload? (gpupool logs [-f] ID)");
    long long offset = 0;
    /* The output is the workload's, and its readers are not only its owner:
     * on a terminal it cannot drive the terminal (cli_term_write); piped or
     * redirected it is written as the task wrote it. */
    int tty = isatty(STDOUT_FILENO);
    cli_term term = {0};
    for (;;) {
        char path[256];
        char *raw = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "/api/v1/workloads/%s/logs?task=%s&offset=%lld", id, task,
                 offset);
        int rc = cli_call(c, "GET", path, NULL, NULL, &raw, &len);
        if (rc == EXIT_OK && tty)
            cli_term_write(&term, raw, len, stdout);
        else if (rc == EXIT_OK)
            fwrite(raw, 1, len, stdout);
        if (!follow || rc != EXIT_OK)
            cli_term_end(&term, stdout); /* the end of the output */
        fflush(stdout);
        if (rc != EXIT_OK)
            return rc;
        free(raw);
        /* Where the answer began: past the offset asked for when what lay
         * between was rotated away (an older daemon does not say). */
        if (c->log_offset > offset)
            offset = c->log_offset;
        offset += (long long)len;
        if (!follow)
            return EXIT_OK;
        if (len > 0)
            continue;
        json_t *w;
        snprintf(path, sizeof path, "/api/v1/workloads/%s", id);
        if ((rc = cli_call(c, "GET", path, NULL, &w, NULL, NULL)) != EXIT_OK) {
            cli_term_end(&term, stdout);
            return rc;
        }
        int done = cli_wl_over(w);
        json_decref(w);
        if (done) {
            /* One last read: output written just before the end. */
            follow = 0;
            continue;
        }
        usleep(500 * 1000);
    }
}

int cmd_stop(cli *c, int argc, char **argv) {
    const char *verb = argv[0];
    if (argc < 2)
        return cli_usage(verb, "which workloads? (gpupool %s ID...)", verb);
    for (int i = 1; i < argc; i++) {
        int64_t x;
        if (cli_parse_int(verb, "workload id", argv[i], 1, INT64_MAX, &x) != EXIT_OK)
            return EXIT_USAGE;
    }
    /* --json: one workload's answer as it is; several as one document,
     * {"workloads": [...]} like list, with the errors on standard error. */
    json_t *all = c->json && argc > 2 ? json_array() : NULL;
    if (all)
        c->json = 0;
    int rc = EXIT_OK;
    for (int i = 1; i < argc; i++) {
        char path[256];
        json_t *w;
        if (strcmp(verb, "delete") == 0)
            snprintf(path, sizeof path, "/api/v1/workloads/%s", argv[i]);
        else
            snprintf(path, sizeof path, "/api/v1/workloads/%s/%s", argv[i], verb);
        int r = cli_call(c, strcmp(verb, "delete") == 0 ? "DELETE" : "POST", path, NULL, &w, NULL,
                         NULL);
        if (r != EXIT_OK) {
            rc = r;
            continue;
        }
        if (all)
            json_array_append(all, w);
        else if (c->json)
            cli_print_json(w);
        else
            printf("workload %s: %s\n", argv[i], cli_str(w, "state"));
        json_decref(w);
    }
    if (all) {
        json_t *doc = json_pack("{s:o}", "workloads", all);
        cli_print_json(doc);
        json_decref(doc);
    }
    return rc;
}
