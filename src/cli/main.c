/*
 * main.c — the gpupool command: global options, the configuration (flags,
 * then GPUPOOL_SERVER / GPUPOOL_TOKEN / GPUPOOL_TOKEN_FILE, then
 * ~/.config/gpupool/config, then the address and admin token of a daemon
 * started with its defaults in the current directory, if they are the user's
 * own), the help texts and the dispatch to commands.
 * It speaks to gpupoold only through its HTTP API.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/gp_clock.h"
#include "common/gp_env.h"
#include "common/httpc.h"

static const char main_help[] =
    "usage: gpupool [--server URL] [--token TOKEN] [--json] COMMAND [ARGS]\n"
    "\n"
    "Workloads:\n"
    "  submit     submit a workload:  gpupool submit --project P --gpu 0.5 -- python train.py\n"
    "  list       list workloads (table; --json for scripts)\n"
    "  describe   one workload: state, why it waits, tasks, attempts, events\n"
    "  logs       a task's output (-f follows it)\n"
    "  delete     delete workloads (running tasks are stopped)\n"
    "  suspend    checkpoint signal, grace period, stop; kept until resumed\n"
    "  resume     put suspended workloads back in the queue\n"
    "Administration:\n"
    "  queue      departments and projects: list, create, set, delete\n"
    "  node       node list: GPUs, slices, memory really used\n"
    "  usage      GPU-hours allocated, used, idle, borrowed, lent (--csv for chargeback)\n"
    "  export     workloads|nodes|projects as CSV for gpupool-sim plan (admins)\n"
    "  run -it    an interactive session: a shell (or a command) on a terminal, attached\n"
    "  attach     back to an interactive workload's terminal (Ctrl-P Ctrl-Q detaches)\n"
    "  exec       run a command in a running interactive workload\n"
    "  port-forward  a local port to a port inside an interactive workload\n"
    "  notebook   Jupyter in an interactive workload, its local URL printed\n"
    "  token      API tokens: create, list, delete\n"
    "  whoami     the user, role and scope of the token in use\n"
    "\n"
    "  help CMD   details of a command; `gpupool help config`, `gpupool help exit-codes`\n"
    "\n"
    "The server and token come from --server/--token, else GPUPOOL_SERVER and\n"
    "GPUPOOL_TOKEN (or GPUPOOL_TOKEN_FILE), else ~/.config/gpupool/config, else\n"
    "the address and admin token in ./gpupool-data (only if you own it and nobody\n"
    "else may write there), else http://127.0.0.1:8642.\n";

static const char config_help[] =
    "Configuration file: ~/.config/gpupool/config ($XDG_CONFIG_HOME/gpupool/config)\n"
    "\n"
    "    # key = value; '#' starts a comment\n"
    "    server = http://127.0.0.1:8642\n"
    "    token = gp_0123...            # or:\n"
    "    token_file = /path/to/token\n"
    "\n"
    "Environment variables override the file: GPUPOOL_SERVER, GPUPOOL_TOKEN,\n"
    "GPUPOOL_TOKEN_FILE. Flags override both: --server, --token.\n";

int cli_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpupool %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see: gpupool help %s)\n", cmd);
    va_end(ap);
    return EXIT_USAGE;
}

/* The one map from an HTTP status to an exit code. */
int cli_exit_for_status(int status) {
    if (status >= 200 && status < 300)
        return EXIT_OK;
    switch (status) {
    case 400:
    case 413:
        return EXIT_INVALID;
    case 401:
    case 403:
        return EXIT_AUTH;
    case 404:
        return EXIT_NOTFOUND;
    case 405:
        return EXIT_USAGE;
    case 409:
        return EXIT_CONFLICT;
    default:
        return status >= 500 ? EXIT_SERVER : EXIT_ERROR;
    }
}

#define LOCAL_ADDR     "gpupool-data/gpupoold.addr"
#define DEFAULT_SERVER "http://127.0.0.1:8642"

static void unreachable_hint(const cli *c);

int cli_call(cli *c, const char *method, const char *path, json_t *body, json_t **out, char **raw,
             size_t *rawlen) {
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    gp_http_resp resp;
    char err[512];
    int rc = gp_http_request(c->server, method, path, c->token, text, &resp, err, sizeof err);
    free(text);
    if (out)
        *out = NULL;
    if (rc < 0) {
        fprintf(stderr, "gpupool: %s\n", err);
        unreachable_hint(c);
        return EXIT_UNREACHABLE;
    }
    c->log_offset = resp.log_offset;
    int code = cli_exit_for_status(resp.status);
    if (code != EXIT_OK) {
        json_t *j = json_loadb(resp.body, resp.len, 0, NULL);
        const char *msg =
            j ? json_string_value(json_object_get(json_object_get(j, "error"), "message")) : NULL;
        if (c->json && j)
            cli_print_json(j);
        char *shown = cli_visible(msg ? msg : resp.body);
        fprintf(stderr, "gpupool: %s\n", shown ? shown : "(unprintable answer)");
        free(shown);
        json_decref(j);
    } else if (raw) {
        *raw = resp.body;
        *rawlen = resp.len;
        resp.body = NULL;
    } else if (out) {
        *out = json_loadb(resp.body, resp.len, 0, NULL);
        if (!*out) {
            fprintf(stderr, "gpupool: the server's answer is not JSON\n");
            code = EXIT_ERROR;
        }
    }
    gp_http_resp_free(&resp);
    return code;
}

int cli_get_listing(cli *c, const char *path, json_t **out) {
    int rc = cli_call(c, "GET", path, NULL, out, NULL, NULL);
    if (rc == EXIT_OK && c->json) {
        cli_print_json(*out);
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

void cli_print_json(json_t *j) {
    /* JSON escapes the C0 controls but not the C1 (U+0080..U+009F), which a
     * terminal may obey: there, every character beyond ASCII is escaped
     * (the same JSON); piped, the text is as the server sent it. */
    size_t ascii = isatty(STDOUT_FILENO) ? JSON_ENSURE_ASCII : 0;
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | ascii);
    if (s)
        puts(s);
    free(s);
}

void cli_age(int64_t ms, char *buf, size_t len) {
    int64_t s = (gp_clock_ms(CLOCK_REALTIME) - ms) / 1000;
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(buf, len, "%llds", (long long)s);
    else if (s < 7200)
        snprintf(buf, len, "%lldm", (long long)(s / 60));
    else if (s < 172800)
        snprintf(buf, len, "%lldh", (long long)(s / 3600));
    else
        snprintf(buf, len, "%lldd", (long long)(s / 86400));
}

int cli_wl_state(json_t *w) {
    gp_wl_state s;
    const char *name = json_string_value(json_object_get(w, "state"));
    return name != NULL && gp_wl_state_parse(name, &s) == 0 ? (int)s : -1;
}

int cli_wl_over(json_t *w) {
    int s = cli_wl_state(w);
    return s >= 0 && !gp_wl_state_active((gp_wl_state)s);
}

const char *cli_str(json_t *j, const char *name) {
    const char *s = json_string_value(json_object_get(j, name));
    if (!s)
        return "";
    char *v = cli_visible(s);
    if (!v || strcmp(v, s) == 0) {
        free(v);
        return s;
    }
    json_object_set_new(j, name, json_string(v));
    free(v);
    s = json_string_value(json_object_get(j, name));
    return s ? s : "";
}

/* ---- Configuration ------------------------------------------------------- */

static void read_token_file(cli *c, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(c->token, sizeof c->token, f))
        c->token[strcspn(c->token, " \r\n")] = '\0';
    fclose(f);
}

static void read_config(cli *c, int have_server, int have_token) {
    char path[1024];
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(path, sizeof path, "%s/gpupool/config", xdg);
    else if (home)
        snprintf(path, sizeof path, "%s/.config/gpupool/config", home);
    else
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "#\r\n")] = '\0';
        char key[64], val[250];
        if (sscanf(line, " %63[a-z_] = %249s", key, val) != 2)
            continue;
        if (strcmp(key, "server") == 0 && !have_server) {
            snprintf(c->server, sizeof c->server, "%s", val);
            c->server_from = "~/.config/gpupool/config";
        } else if (strcmp(key, "token") == 0 && !have_token) {
            snprintf(c->token, sizeof c->token, "%s", val);
            c->token_from = "~/.config/gpupool/config";
        } else if (strcmp(key, "token_file") == 0 && !have_token) {
            read_token_file(c, val);
            c->token_from = "~/.config/gpupool/config";
        }
    }
    fclose(f);
}

/* Whether path may be trusted as this user's own: not a symbolic link, owned
 * by the user, writable by nobody else; dir says whether it must be a
 * directory (else a regular file). A file in a directory that others may
 * write could be replaced by them, so both the file and its directory are
 * checked. */
static int owned_private(const char *path, int dir) {
    struct stat st;
    if (lstat(path, &st) < 0)
        return 0;
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return 0;
    return st.st_uid == geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* The address and admin token of a daemon started with its defaults in the
 * current directory, used only together and only when the directory and both
 * files are this user's own: a shared directory where someone else wrote a
 * gpupool-data/gpupoold.addr would otherwise receive the user's token. */
static void local_daemon(cli *c) {
    static const char *const dir = "gpupool-data", *const addr = LOCAL_ADDR,
                             *const tok = "gpupool-data/admin.token";
    if (access(addr, F_OK) != 0)
        return;
    if (!owned_private(dir, 1) || !owned_private(addr, 0) || !owned_private(tok, 0)) {
        fprintf(stderr,
                "gpupool: ignoring ./%s: it, its directory or %s is not owned by you or is "
                "writable by others\n",
                addr, tok);
        return;
    }
    char server[sizeof c->server] = "";
    FILE *f = fopen(addr, "r");
    if (f) {
        if (fgets(server, sizeof server, f))
            server[strcspn(server, "\r\n")] = '\0';
        fclose(f);
    }
    char saved[sizeof c->token];
    memcpy(saved, c->token, sizeof saved);
    c->token[0] = '\0';
    read_token_file(c, tok);
    if (!server[0] || !c->token[0]) {
        memcpy(c->token, saved, sizeof saved);
        return;
    }
    snprintf(c->server, sizeof c->server, "%s", server);
    c->server_from = "./" LOCAL_ADDR;
}

/* After a failed connection: where the server came from, and what to set.
 * The usual trap is a token set in the environment beside a daemon started
 * with its defaults: its address file is used only with its own admin token
 * (a token is never sent to an address read from a file unless that file came
 * with it), so the default address was tried instead. An address file that
 * is not the user's own is not shown. */
static void unreachable_hint(const cli *c) {
    if (c->server_from != NULL && c->server_from[0] != '\0') {
        fprintf(stderr, "gpupool: the server %s was taken from %s\n", c->server, c->server_from);
        return;
    }
    char addr[256] = "";
    FILE *f = owned_private("gpupool-data", 1) && owned_private(LOCAL_ADDR, 0)
                  ? fopen(LOCAL_ADDR, "r")
                  : NULL;
    if (f != NULL) {
        if (fgets(addr, sizeof addr, f) == NULL)
            addr[0] = '\0';
        addr[strcspn(addr, "\r\n")] = '\0';
        fclose(f);
    }
    char *shown = addr[0] != '\0' ? cli_visible(addr) : NULL;
    if (shown != NULL && c->token_from != NULL && c->token_from[0] != '\0')
        fprintf(stderr,
                "gpupool: no server is set, so the default %s was tried: ./" LOCAL_ADDR
                " (%s) is used only with the admin token beside it, and a token is set (%s);\n"
                "  to send this token to that daemon: export " GP_ENV_SERVER "=%s\n",
                DEFAULT_SERVER, shown, c->token_from, shown);
    else
        fprintf(stderr,
                "gpupool: no server is set, so the default %s was tried: set " GP_ENV_SERVER
                " (or --server, or \"server = URL\" in ~/.config/gpupool/config)\n",
                DEFAULT_SERVER);
    free(shown);
}

static void configure(cli *c, const char *flag_server, const char *flag_token) {
    const char *s = flag_server ? flag_server : getenv(GP_ENV_SERVER);
    const char *t = flag_token ? flag_token : getenv(GP_ENV_TOKEN);
    c->server_from = c->token_from = "";
    if (s && *s) {
        snprintf(c->server, sizeof c->server, "%s", s);
        c->server_from = flag_server ? "--server" : GP_ENV_SERVER;
    }
    if (t && *t) {
        snprintf(c->token, sizeof c->token, "%s", t);
        c->token_from = flag_token ? "--token" : GP_ENV_TOKEN;
    } else if (getenv(GP_ENV_TOKEN_FILE)) {
        read_token_file(c, getenv(GP_ENV_TOKEN_FILE));
        c->token_from = GP_ENV_TOKEN_FILE;
    }
    read_config(c, c->server[0] != 0, c->token[0] != 0);
    /* Beside a daemon started with its defaults: its address and its admin
     * token, as a pair, when neither was configured. */
    if (!c->server[0] && !c->token[0])
        local_daemon(c);
    if (!c->server[0])
        snprintf(c->server, sizeof c->server, DEFAULT_SERVER);
}

/* ---- Dispatch ---------------------------------------------------------------- */

static int help(const char *what) {
    if (!what) {
        fputs(main_help, stdout);
        return EXIT_OK;
    }
    if (strcmp(what, "config") == 0) {
        fputs(config_help, stdout);
        return EXIT_OK;
    }
    if (strcmp(what, "exit-codes") == 0) {
        puts("Exit codes of gpupool:");
#define GP_CLI_EXIT_HELP_(sym, num, text) printf("  %d  %s\n", num, text);
        GP_CLI_EXIT_CODES(GP_CLI_EXIT_HELP_)
#undef GP_CLI_EXIT_HELP_
        puts("Once a session has started, run -it, attach and exec exit with the status of\n"
             "the command in the workload (128+N when a signal N ended it), and 0 after a\n"
             "detach (Ctrl-P Ctrl-Q); the codes above apply only when it could not start\n"
             "or the connection was lost (3: the workload keeps running).");
        return EXIT_OK;
    }
    const char *t = cli_help_text(what);
    if (!t) {
        fprintf(stderr, "gpupool: no command \"%s\"\n", what);
        return EXIT_USAGE;
    }
    fputs(t, stdout);
    return EXIT_OK;
}

static const struct {
    const char *name;
    int (*fn)(cli *, int, char **);
} commands[] = {
    {"submit", cmd_submit},     {"list", cmd_list},     {"ls", cmd_list},
    {"describe", cmd_describe}, {"logs", cmd_logs},     {"delete", cmd_stop},
    {"suspend", cmd_stop},      {"resume", cmd_stop},   {"queue", cmd_queue},
    {"node", cmd_node},         {"token", cmd_token},   {"whoami", cmd_whoami},
    {"usage", cmd_usage},       {"export", cmd_export}, {"run", cmd_run},
    {"attach", cmd_attach},     {"exec", cmd_exec},     {"port-forward", cmd_port_forward},
    {"notebook", cmd_notebook},
};

int main(int argc, char **argv) {
    cli c;
    memset(&c, 0, sizeof c);
    const char *server = NULL, *token = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0)
            c.json = 1;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return help(NULL);
        else if (strcmp(a, "--version") == 0) {
            puts("gpupool 0.1 (API v1)");
            return EXIT_OK;
        } else if ((strcmp(a, "--server") == 0 || strcmp(a, "--token") == 0) && i + 1 < argc) {
            if (a[2] == 's')
                server = argv[++i];
            else
                token = argv[++i];
        } else {
            return cli_usage("", "unknown option %s", a);
        }
    }
    if (i >= argc) {
        /* No command: say how to use it, and fail, so scripts notice. */
        fputs(main_help, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[i];
    if (strcmp(cmd, "help") == 0)
        return help(i + 1 < argc ? argv[i + 1] : NULL);
    /* --help anywhere among the command's options asks for its help. --json
     * there applies to the whole call and is taken out here, so that no
     * command acts on its arguments before it has seen it (delete 7 --json
     * printed a sentence). Neither is looked for in a submitted command,
     * after "--". */
    int n = i + 1;
    for (int k = i + 1; k < argc; k++) {
        if (strcmp(argv[k], "--") == 0) {
            while (k < argc)
                argv[n++] = argv[k++];
            break;
        }
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0)
            return help(cmd);
        if (strcmp(argv[k], "--json") == 0)
            c.json = 1;
        else
            argv[n++] = argv[k];
    }
    argc = n;
    configure(&c, server, token);
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (strcmp(commands[k].name, cmd) == 0)
            return commands[k].fn(&c, argc - i, argv + i);
    fprintf(stderr, "gpupool: no command \"%s\" (see gpupool --help)\n", cmd);
    return EXIT_USAGE;
}
