/*
 * cmd-admin.c — the administration commands of gpupool: queue (the tree of
 * departments and projects with quotas, fair share and usage), node, token
 * and whoami.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/gp_queue.h"
#include "common/gp_submit.h"

#define FLAG(name) (v = cli_flag(argc, argv, &i, name, &missing))

/* A GPU amount from JSON (number of GPUs, or null for unlimited). */
static void gpus_str(json_t *v, char *buf, size_t len) {
    if (!v || json_is_null(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%g", json_number_value(v));
}

/* Sets the part of a quota (deserved or limit) that flag p names in b, a
 * limit's none or unlimited as null (unlimited). Returns an exit code. */
static int quota_part(json_t *b, const gp_field *f, const gp_queue_part *p, const char *v) {
    json_t *o = json_object_get(b, f->name);
    if (o == NULL) {
        o = json_object();
        json_object_set_new(b, f->name, o);
    }
    if (f == &gp_queue_fields[GP_QUEUE_F_limit] &&
        (strcmp(v, "none") == 0 || strcmp(v, "unlimited") == 0)) {
        json_object_set_new(o, p->f.name, json_null());
        return EXIT_OK;
    }
    return cli_field_flag("queue", o, &p->f, v);
}

/* Reads the flags of "queue create" and "queue set", each as its field of
 * GP_QUEUE_FIELDS (common/gp_queue.h) says; those of the queue's place
 * (--parent) only at creation. */
static int quota_flags(int argc, char **argv, int start, json_t *b, int create) {
    for (int i = start; i < argc; i++) {
        int missing = 0, rc = -1;
        const char *v;
        for (int k = 0; k < GP_QUEUE_NFIELDS && rc < 0 && !missing; k++) {
            const gp_field *f = &gp_queue_fields[k];
            if (f->flag == NULL || (f->required && !create))
                continue;
            if (f->type != GP_SUBMIT_QUOTA) {
                if ((v = cli_flag(argc, argv, &i, f->flag, &missing)) != NULL)
                    rc = cli_field_flag("queue", b, f, v);
                continue;
            }
            for (int r = 0; r < GP_QUEUE_NRES && rc < 0 && !missing; r++) {
                gp_queue_part p;
                gp_queue_part_of(f, r, &p);
                if ((v = cli_flag(argc, argv, &i, p.f.flag, &missing)) != NULL)
                    rc = quota_part(b, f, &p, v);
            }
        }
        if (rc < 0)
            return cli_usage("queue", missing ? "%s needs a value" : "unknown argument %s",
                             argv[i]);
        if (rc != EXIT_OK)
            return rc;
    }
    return EXIT_OK;
}

static int queue_list(cli *c) {
    json_t *out;
    int rc = cli_get_listing(c, "/api/v1/queues", &out);
    if (rc != EXIT_OK || !out)
        return rc;
    static const char *const head[] = {"QUEUE",     "DESERVED", "LIMIT",   "WEIGHT",  "FAIR-SHARE",
                                       "ALLOCATED", "USED",     "PENDING", "RUNNING", "ON-PREEMPT"};
    cli_table t;
    cli_table_init(&t, 10, head);
    size_t k;
    json_t *q;
    json_array_foreach(json_object_get(out, "queues"), k, q) {
        char name[160], des[32], lim[32], w[32], fs[32], al[32], us[32], pe[32], ru[32];
        int depth = (int)json_integer_value(json_object_get(q, "depth"));
        snprintf(name, sizeof name, "%*s%s", 2 * depth, "", cli_str(q, "name"));
        gpus_str(json_object_get(json_object_get(q, "deserved"), "gpu"), des, sizeof des);
        gpus_str(json_object_get(json_object_get(q, "limit"), "gpu"), lim, sizeof lim);
        gpus_str(json_object_get(json_object_get(q, "weight"), "gpu"), w, sizeof w);
        gpus_str(json_object_get(json_object_get(q, "fair_share"), "gpu"), fs, sizeof fs);
        gpus_str(json_object_get(json_object_get(q, "allocated"), "gpu"), al, sizeof al);
        /* Busy GPUs as NVML measured them; "-" where nothing can measure. */
        json_t *u = json_object_get(json_object_get(q, "used"), "gpu");
        if (json_is_number(u))
            snprintf(us, sizeof us, "%.2f", json_number_value(u));
        else
            snprintf(us, sizeof us, "-");
        snprintf(pe, sizeof pe, "%lld",
                 (long long)json_integer_value(json_object_get(q, "pending")));
        snprintf(ru, sizeof ru, "%lld",
                 (long long)json_integer_value(json_object_get(q, "running")));
        /* The default eviction mode in force below the queue: its own, or
         * where it comes from. */
        char mode[96];
        const char *from = cli_str(q, "on_preempt_from");
        if (json_is_string(json_object_get(q, "on_preempt_own")))
            snprintf(mode, sizeof mode, "%s", cli_str(q, "on_preempt"));
        else
            snprintf(mode, sizeof mode, "%s (%s%s)", cli_str(q, "on_preempt"),
                     *from ? "from " : "default", from);
        const char *row[] = {name, des, lim, w, fs, al, us, pe, ru, mode};
        cli_table_add(&t, row);
    }
    cli_table_print(&t);
    json_array_foreach(json_object_get(out, "warnings"), k, q) {
        char *shown = cli_visible(json_string_value(q) ? json_string_value(q) : "");
        printf("warning: %s\n", shown ? shown : "");
        free(shown);
    }
    json_decref(out);
    return EXIT_OK;
}

int cmd_queue(cli *c, int argc, char **argv) {
    const char *sub = argc > 1 ? argv[1] : "list";
    if (strcmp(sub, "list") == 0 || strcmp(sub, "ls") == 0)
        return queue_list(c);
    if (argc < 3)
        return cli_usage("queue", "queue %s needs a queue name", sub);
    const char *name = argv[2];
    char path[256];
    snprintf(path, sizeof path, "/api/v1/queues/%s", name);
    json_t *b = json_object(), *out = NULL;
    int rc;
    if (strcmp(sub, "create") == 0) {
        json_object_set_new(b, "name", json_string(name));
        rc = quota_flags(argc, argv, 3, b, 1);
        if (rc == EXIT_OK)
            rc = cli_call(c, "POST", "/api/v1/queues", b, &out, NULL, NULL);
    } else if (strcmp(sub, "set") == 0) {
        rc = quota_flags(argc, argv, 3, b, 0);
        if (rc == EXIT_OK)
            rc = cli_call(c, "PATCH", path, b, &out, NULL, NULL);
    } else if (strcmp(sub, "delete") == 0) {
        rc = cli_call(c, "DELETE", path, NULL, &out, NULL, NULL);
    } else {
        rc = cli_usage("queue", "no subcommand \"%s\" (list, create, set, delete)", sub);
    }
    json_decref(b);
    if (rc == EXIT_OK) {
        if (c->json)
            cli_print_json(out);
        else
            printf("queue %s: %s\n", name, strcmp(sub, "delete") == 0 ? "deleted" : "ok");
    }
    json_decref(out);
    return rc;
}

int cmd_node(cli *c, int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "list") != 0 && strcmp(argv[i], "ls") != 0)
            return cli_usage("node", "unknown argument %s (node list)", argv[i]);
    json_t *out;
    int rc = cli_get_listing(c, "/api/v1/nodes", &out);
    if (rc != EXIT_OK || !out)
        return rc;
    if (json_is_true(json_object_get(out, "emulated")))
        printf("NOTE: these GPUs are EMULATED (no real GPU found)\n");
    static const char *const head[] = {"NODE",      "GPU",    "MODEL",    "MEMORY",
                                       "ALLOCATED", "SLICES", "MEM-USED", "WORKLOADS"};
    cli_table t;
    cli_table_init(&t, 8, head);
    size_t k, g;
    json_t *n, *x;
    json_array_foreach(json_object_get(out, "nodes"), k, n) {
        json_array_foreach(json_object_get(n, "gpus"), g, x) {
            char idx[24], mem[32], al[32], sl[24], used[32], wls[256] = "";
            snprintf(idx, sizeof idx, "%zu", g);
            snprintf(mem, sizeof mem, "%.0fG",
                     json_integer_value(json_object_get(x, "memory")) / 1073741824.0);
            snprintf(al, sizeof al, "%g", json_number_value(json_object_get(x, "allocated")));
            snprintf(sl, sizeof sl, "%lld",
                     (long long)json_integer_value(json_object_get(x, "slices_count")));
            snprintf(used, sizeof used, "%.1fG",
                     json_integer_value(json_object_get(x, "memory_used")) / 1073741824.0);
            size_t s, len = 0;
            json_t *y;
            json_array_foreach(json_object_get(x, "slices"), s, y) {
                /* A slice with a compute share shows it: 12(30%). */
                json_t *gc = json_object_get(y, "gpu_compute");
                char share[16] = "";
                if (gc)
                    snprintf(share, sizeof share, "(%.0f%%)", json_number_value(gc) * 100);
                if (len < sizeof wls)
                    len += (size_t)snprintf(
                        wls + len, sizeof wls - len, "%s%lld%s", s ? "," : "",
                        (long long)json_integer_value(json_object_get(y, "workload")), share);
            }
            /* A GPU the executor says others hold (a Slurm user's job). */
            if (json_is_true(json_object_get(x, "taken")))
                snprintf(wls, sizeof wls, "(held outside the pool)");
            const char *row[] = {
                cli_str(n, "name"), idx, cli_str(x, "model"), mem, al, sl, used, wls};
            cli_table_add(&t, row);
        }
    }
    cli_table_print(&t);
    /* Each node's CPU and memory: what its tasks asked for, and what the
     * node really uses ("?" where the executor cannot tell). */
    static const char *const nhead[] = {"NODE",   "CPUS",      "CPU-ASKED", "CPU-IN-USE",
                                        "MEMORY", "MEM-ASKED", "MEM-IN-USE"};
    cli_table nt;
    cli_table_init(&nt, 7, nhead);
    json_array_foreach(json_object_get(out, "nodes"), k, n) {
        char cpu[32], asked[32], cin[32] = "?", mem[32], masked[32], min[32] = "?";
        snprintf(cpu, sizeof cpu, "%g", json_number_value(json_object_get(n, "cpu")));
        snprintf(asked, sizeof asked, "%g", json_number_value(json_object_get(n, "cpu_used")));
        snprintf(mem, sizeof mem, "%.1fG",
                 json_integer_value(json_object_get(n, "memory")) / 1073741824.0);
        snprintf(masked, sizeof masked, "%.1fG",
                 json_integer_value(json_object_get(n, "memory_used")) / 1073741824.0);
        if (json_is_number(json_object_get(n, "cpu_in_use")))
            snprintf(cin, sizeof cin, "%.2f", json_number_value(json_object_get(n, "cpu_in_use")));
        if (json_is_integer(json_object_get(n, "memory_in_use")))
            snprintf(min, sizeof min, "%.1fG",
                     json_integer_value(json_object_get(n, "memory_in_use")) / 1073741824.0);
        const char *row[] = {cli_str(n, "name"), cpu, asked, cin, mem, masked, min};
        cli_table_add(&nt, row);
    }
    printf("\n");
    cli_table_print(&nt);
    /* The executor's sentences start with "GPU devices:" and "GPU memory
     * limits:"; an executor that says nothing prints nothing. */
    const char *says[] = {cli_str(out, "gpu_devices"), cli_str(out, "gpu_memory_limits")};
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++)
        if (says[i][0] != '\0')
            printf("%s\n", says[i]);
    json_decref(out);
    return EXIT_OK;
}

int cmd_token(cli *c, int argc, char **argv) {
    const char *sub = argc > 1 ? argv[1] : "list";
    json_t *b = json_object(), *out = NULL;
    int rc = EXIT_OK, missing = 0;
    const char *v;
    for (int i = 2; i < argc && rc == EXIT_OK; i++) {
        if (FLAG("--user"))
            json_object_set_new(b, "user", json_string(v));
        else if (FLAG("--role"))
            json_object_set_new(b, "role", json_string(v));
        else if (FLAG("--scope"))
            json_object_set_new(b, "scope", json_string(v));
        else if (FLAG("--name"))
            json_object_set_new(b, "name", json_string(v));
        else if (FLAG("--unix-user"))
            json_object_set_new(b, "unix_user", json_string(v));
        else if (strcmp(sub, "delete") == 0 && argv[i][0] != '-') {
            char path[128];
            snprintf(path, sizeof path, "/api/v1/tokens/%s", argv[i]);
            rc = cli_call(c, "DELETE", path, NULL, &out, NULL, NULL);
            if (rc == EXIT_OK && c->json)
                cli_print_json(out);
            else if (rc == EXIT_OK)
                printf("token %s revoked\n", argv[i]);
            json_decref(out);
            out = NULL;
        } else
            rc = cli_usage("token", missing ? "%s needs a value" : "unknown argument %s", argv[i]);
    }
    if (rc != EXIT_OK || strcmp(sub, "delete") == 0) {
        json_decref(b);
        return rc;
    }
    if (strcmp(sub, "create") == 0) {
        rc = cli_call(c, "POST", "/api/v1/tokens", b, &out, NULL, NULL);
        if (rc == EXIT_OK && !c->json)
            printf("%s\n# token %lld for %s (%s%s%s), workloads run as Unix user %s; shown only "
                   "now\n",
                   cli_str(out, "token"), (long long)json_integer_value(json_object_get(out, "id")),
                   cli_str(out, "user"), cli_str(out, "role"), *cli_str(out, "scope") ? ": " : "",
                   cli_str(out, "scope"), cli_str(out, "unix_user"));
    } else if (strcmp(sub, "list") == 0 || strcmp(sub, "ls") == 0) {
        rc = cli_call(c, "GET", "/api/v1/tokens", NULL, &out, NULL, NULL);
        if (rc == EXIT_OK && !c->json) {
            static const char *const head[] = {"ID", "NAME", "USER", "UNIX USER", "ROLE", "SCOPE"};
            cli_table t;
            cli_table_init(&t, 6, head);
            size_t k;
            json_t *x;
            json_array_foreach(json_object_get(out, "tokens"), k, x) {
                char id[32];
                snprintf(id, sizeof id, "%lld",
                         (long long)json_integer_value(json_object_get(x, "id")));
                const char *row[] = {id,
                                     cli_str(x, "name"),
                                     cli_str(x, "user"),
                                     cli_str(x, "unix_user"),
                                     cli_str(x, "role"),
                                     cli_str(x, "scope")};
                cli_table_add(&t, row);
            }
            cli_table_print(&t);
        }
    } else {
        rc = cli_usage("token", "no subcommand \"%s\" (create, list, delete)", sub);
    }
    if (rc == EXIT_OK && c->json)
        cli_print_json(out);
    json_decref(out);
    json_decref(b);
    return rc;
}

int cmd_whoami(cli *c, int argc, char **argv) {
    if (argc > 1)
        return cli_usage("whoami", "unknown argument %s", argv[1]);
    json_t *out;
    int rc = cli_call(c, "GET", "/api/v1/whoami", NULL, &out, NULL, NULL);
    if (rc != EXIT_OK)
        return rc;
    if (c->json)
        cli_print_json(out);
    else
        printf("%s (%s%s%s) at %s\n", cli_str(out, "user"), cli_str(out, "role"),
               *cli_str(out, "scope") ? ": " : "", cli_str(out, "scope"), c->server);
    json_decref(out);
    return EXIT_OK;
}
