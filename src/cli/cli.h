/*
 * cli.h — what the files of the gpupool command share: the connection
 * settings, the one call that speaks to gpupoold, the exit codes (mapped in
 * one place, cli_exit_for_status) and small output helpers.
 */
#ifndef GP_CLI_H
#define GP_CLI_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "common/gp_submit.h"
#include "common/gp_workload.h"

/* Exit codes, documented in `gpupool help exit-codes` and docs/cli.md. */
#define GP_CLI_EXIT_CODES(XX)                                                                      \
    XX(OK, 0, "success")                                                                           \
    XX(ERROR, 1, "an error not covered below")                                                     \
    XX(USAGE, 2, "bad command line")                                                               \
    XX(UNREACHABLE, 3, "gpupoold could not be reached")                                            \
    XX(AUTH, 4, "no token, an unknown token, or a role that may not do this")                      \
    XX(NOTFOUND, 5, "no such workload, queue or token")                                            \
    XX(INVALID, 6, "the server rejected the request as invalid")                                   \
    XX(CONFLICT, 7, "not possible in the object's current state")                                  \
    XX(SERVER, 8, "the server failed: its store full or read-only, an internal error")             \
    XX(FAILED, 9, "the workload waited for ended in failure")

enum {
#define GP_CLI_EXIT_ENUM_(sym, num, text) EXIT_##sym = num,
    GP_CLI_EXIT_CODES(GP_CLI_EXIT_ENUM_)
#undef GP_CLI_EXIT_ENUM_
};

typedef struct cli {
    char server[512];
    char token[256];
    int json; /* --json: print the server's JSON */
    /* Where the server and the token were taken from ("--server",
     * "GPUPOOL_TOKEN", ...; "" for the default server, or no token), to say
     * why a server cannot be reached. */
    const char *server_from;
    const char *token_from;
    long long log_offset; /* the last answer's X-Log-Offset, or -1 */
} cli;

/*
 * Sends a request; on success (2xx) returns EXIT_OK and *out (may be NULL)
 * holds the parsed JSON answer (caller decrefs). On failure prints the
 * server's message (or the transport error) to stderr and returns the exit
 * code for it. raw, if not NULL, receives the raw body instead of parsing.
 */
int cli_call(cli *c, const char *method, const char *path, json_t *body, json_t **out, char **raw,
             size_t *rawlen);

/* GETs path for a listing: with --json prints the answer itself and leaves
 * *out NULL; else *out holds it for a table (caller decrefs). Returns as
 * cli_call does. */
int cli_get_listing(cli *c, const char *path, json_t **out);

/* Prints a usage error and returns EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * If argv[*i] is the flag name ("--name VALUE" or "--name=VALUE"), returns
 * its value and advances *i past it; a flag without its value sets *missing.
 * Returns NULL if argv[*i] is another argument.
 */
const char *cli_flag(int argc, char **argv, int *i, const char *name, int *missing);

/*
 * The one parser of the numbers a person types (number.c). Each takes all of
 * text or fails; on failure it prints a usage error for cmd naming flag and
 * repeating text, and returns EXIT_USAGE (else EXIT_OK, *out set).
 * cli_parse_milli reads a decimal with at most 3 decimals, scaled by 1000
 * (GPUs, CPUs), within lo..hi (also scaled); unit names it ("GPUs").
 */
int cli_parse_int(const char *cmd, const char *flag, const char *text, int64_t lo, int64_t hi,
                  int64_t *out);
int cli_parse_milli(const char *cmd, const char *flag, const char *text, const char *unit,
                    int64_t lo, int64_t hi, int64_t *out);
int cli_parse_duration(const char *cmd, const char *flag, const char *text, int64_t *out);

/* Sets field f (of GP_SUBMIT_FIELDS or GP_QUEUE_FIELDS, or a part of a
 * quota) of the request body b from its flag's value v (NULL for a bare
 * flag). Numbers are checked by the one parser and against the list's
 * range, as the daemon checks them (gp_field_out_of_range), before anything
 * is sent, and sent as typed. Returns an exit code; what names the command
 * in a usage error. */
int cli_field_flag(const char *what, json_t *b, const gp_field *f, const char *v);

/* Prints j as indented JSON on stdout; on a terminal, every character
 * beyond ASCII as a \u escape, so that a C1 control cannot drive it. */
void cli_print_json(json_t *j);

/* "12s", "5m", "3h", "2d" since ms (wall clock). */
void cli_age(int64_t ms, char *buf, size_t len);

/* The state of workload w (an object of the API) as a gp_wl_state, or -1
 * where it names none this gpupool knows. */
int cli_wl_state(json_t *w);

/* Whether workload w has come to an end for now (its state is not active:
 * succeeded, failed, deleted, or suspended until resumed), so that waiting
 * for it or following its logs stops. */
int cli_wl_over(json_t *w);

/* Reads "name" from j as a string, "" if missing, as cli_visible() shows it
 * (the escaped form replaces the value in j, so it lives as long as j). */
const char *cli_str(json_t *j, const char *name);

/* A malloc'ed copy of s that a terminal shows as text: control characters,
 * C1 controls and bytes that are not UTF-8 become visible escapes ("\n",
 * "\x1b"), so that a workload's name cannot move the cursor, rewrite earlier
 * lines or set the window title. NULL if out of memory. */
char *cli_visible(const char *s);

/*
 * A task's output on its way to a terminal (gpupool logs): what a terminal
 * shows as text passes (printable UTF-8, newline, tab, carriage return),
 * and so do colours (SGR: ESC [, digits, ';' or ':', then m); every other
 * control character and escape sequence, and bytes that are not UTF-8,
 * become visible escapes ("\x1b") as cli_visible() writes them, so that a
 * workload's output cannot set the window title, write the clipboard
 * (OSC 52) or clear the screen of whoever reads its logs. A character or a
 * colour cut by the end of buf is held for the next call; cli_term_end
 * writes what is held once the output ends.
 */
#define CLI_TERM_HOLD 32
typedef struct cli_term {
    unsigned char held[CLI_TERM_HOLD];
    size_t nheld;
} cli_term;
void cli_term_write(cli_term *t, const char *buf, size_t n, FILE *out);
void cli_term_end(cli_term *t, FILE *out);

/* A table: columns set once, rows added, printed aligned. */
typedef struct cli_table {
    int ncols;
    const char *head[12];
    char **cells; /* rows * ncols strings */
    int nrows;
} cli_table;

void cli_table_init(cli_table *t, int ncols, const char *const *head);
void cli_table_add(cli_table *t, const char *const *cells);
void cli_table_print(cli_table *t);

/* The commands. argv[0] is the command name. */
int cmd_submit(cli *c, int argc, char **argv);
int cmd_list(cli *c, int argc, char **argv);
int cmd_describe(cli *c, int argc, char **argv);
int cmd_logs(cli *c, int argc, char **argv);
int cmd_stop(cli *c, int argc, char **argv); /* delete, suspend, resume */
int cmd_queue(cli *c, int argc, char **argv);
int cmd_node(cli *c, int argc, char **argv);
int cmd_token(cli *c, int argc, char **argv);
int cmd_whoami(cli *c, int argc, char **argv);
int cmd_usage(cli *c, int argc, char **argv);
int cmd_export(cli *c, int argc, char **argv);

int cmd_run(cli *c, int argc, char **argv);
int cmd_attach(cli *c, int argc, char **argv);
int cmd_exec(cli *c, int argc, char **argv);
int cmd_port_forward(cli *c, int argc, char **argv);
int cmd_notebook(cli *c, int argc, char **argv);

/* The exit code for an HTTP status (main.c: the one map). */
int cli_exit_for_status(int status);

/* Fills b, a submission's JSON body, from a submit command line (argv[0]
 * the command's name, what as usage errors name it): EXIT_OK or EXIT_USAGE
 * after printing why. */
int cli_submit_body(const char *what, int argc, char **argv, json_t *b);

/* Help text of a command, or NULL. */
const char *cli_help_text(const char *cmd);

#endif /* GP_CLI_H */
