/*
 * csv.h — the simulator's reader of comma-separated files: one record at a
 * time, with the file name and line number kept for error messages, and
 * strict number parsing that names the field it rejects.
 *
 * Fields may be wrapped in double quotes (a doubled quote inside stands for
 * one); a quoted field may not span lines. Blank lines are skipped. The first
 * record is the header.
 */
#ifndef GP_SIM_CSV_H
#define GP_SIM_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct sim_csv {
    FILE *f;
    int own;        /* close f at the end */
    char path[256]; /* for messages */
    long line;      /* line of the current record */
    char *buf;
    size_t cap;
    char **field;
    size_t nfield, capfield;
    char **header; /* copied names of the header fields */
    size_t nheader;
} sim_csv;

/* Opens path and reads its header. On error, writes "PATH: reason" to err,
 * returns a negative GP_E* code and leaves nothing open. */
int sim_csv_open(sim_csv *c, const char *path, char *err, size_t errlen);

/* The same over a memory buffer (for tests and fuzzing); name is used in
 * messages. */
int sim_csv_open_mem(sim_csv *c, const char *name, const char *data, size_t len, char *err,
                     size_t errlen);

/* Reads the next record: 1 if one was read, 0 at the end of the file, or a
 * negative code with "PATH:LINE: reason" in err. A record whose field count
 * differs from the header's is an error. */
int sim_csv_next(sim_csv *c, char *err, size_t errlen);

/* The index of the header field called name, or -1. */
int sim_csv_col(const sim_csv *c, const char *name);

/* Field i of the current record ("" if i < 0). */
const char *sim_csv_get(const sim_csv *c, int i);

void sim_csv_close(sim_csv *c);

/* Writes a printf-style message to err (if err is not NULL) and returns code:
 * the one way the simulator's readers report a failure. */
int sim_errf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Parses field `col` of the current record as an integer in [min, max]; an
 * empty field gives *out = empty_value, or an error if empty_value is
 * SIM_CSV_REQUIRED. Decimals with a zero fraction ("12.0") are accepted, as
 * pandas writes them. On error writes "PATH:LINE: field NAME: reason".
 */
#define SIM_CSV_REQUIRED INT64_MIN
int sim_csv_int(const sim_csv *c, int col, int64_t min, int64_t max, int64_t empty_value,
                int64_t *out, char *err, size_t errlen);

/* Parses field `col` as a finite double in [min, max]. */
int sim_csv_double(const sim_csv *c, int col, double min, double max, double *out, char *err,
                   size_t errlen);

/* Checks that every header field is one of the names in known[] (NULL
 * terminated) and that every name in required[] is present. */
int sim_csv_check_header(const sim_csv *c, const char *const *known, const char *const *required,
                         char *err, size_t errlen);

#endif /* GP_SIM_CSV_H */
