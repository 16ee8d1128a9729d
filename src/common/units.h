/*
 * units.h — parsing and printing of the quantities people type: sizes
 * ("20G", "512MiB"), durations ("60s", "2m", "500ms"), GPU amounts in
 * milli-GPU ("0.5" is 500, "2" is 2000) and signal names ("TERM", "SIGUSR1",
 * "15"). The daemon (for JSON strings) and the CLI (for flags) share these, so
 * that a value means the same on both sides.
 *
 * Whole numbers in protocols (HTTP lengths and chunk sizes, ids in paths,
 * cursors) are read by gp_parse_uint, the one strict reader of digits.
 *
 * Every parser is exact: decimal fractions are read as integers, never through
 * floating point, and a value that does not fit in an int64_t is GP_ERANGE.
 * Parsers return 0 or a negative GP_E* code and leave *out unchanged on error.
 */
#ifndef GP_UNITS_H
#define GP_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* A whole number in base 10 or 16: digits only (no sign, blanks or "0x"),
 * at least one, at most max. With end NULL the digits must be all of s;
 * otherwise *end is set past them and what follows is the caller's. GP_EINVAL
 * when there is no number, GP_ERANGE above max; on error *out and *end are
 * unchanged. */
int gp_parse_uint(const char *s, const char **end, int base, uint64_t max, uint64_t *out);

/* The value of the hexadecimal digit c (either case), or -1. */
int gp_hex_digit(int c);

/* "1024", "512K", "20G", "1.5GiB", "2T" (binary multiples; "B" optional). */
int gp_parse_size(const char *s, int64_t *out);

/* "500ms", "60s", "2m", "1h", "1d", or several of them, each unit smaller than
 * the one before ("1h30m", "1m1.5s"); a bare number is seconds. */
int gp_parse_duration_ms(const char *s, int64_t *out);

/* A decimal with at most three fractional digits, scaled by 1000:
 * "0.25" -> 250, "4" -> 4000. Negative values are GP_EINVAL. */
int gp_parse_milli(const char *s, int64_t *out);

/* "TERM", "SIGTERM" or a number from 1 to 64. */
int gp_parse_signal(const char *s, int *out);

/* "TERM" for SIGTERM; "SIG<n>" written into a static buffer is avoided by
 * returning NULL for numbers without a name. */
const char *gp_signal_name(int sig);

/* Shortest exact form: 21474836480 -> "20G", 1610612736 -> "1.5G", 1000 -> "1000". */
void gp_format_size(int64_t bytes, char *buf, size_t len);

/* 500 -> "0.5", 2000 -> "2", 1250 -> "1.25", -1500 -> "-1.5". */
void gp_format_milli(int64_t milli, char *buf, size_t len);

/* 61000 -> "1m1s", 1500 -> "1.5s", 500 -> "500ms", 0 -> "0s"; a negative value
 * is "-" and its magnitude. Whatever it prints for ms >= 0,
 * gp_parse_duration_ms reads back as ms. */
void gp_format_duration(int64_t ms, char *buf, size_t len);

#endif /* GP_UNITS_H */
