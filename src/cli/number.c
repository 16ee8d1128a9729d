/*
 * number.c — the one parser of every number a person types on gpupool's
 * command line: whole numbers (--gang, --priority, --weight), amounts with up
 * to three decimals (--gpu, --cpu, --deserved), sizes (--memory) and
 * durations (--grace, --min-runtime). Each parser takes all of the text or
 * nothing, checks the range, and on failure prints a usage error that
 * repeats what was typed, so that "--priority abc" is an error and not a
 * silent 0.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "common/units.h"

int cli_parse_int(const char *cmd, const char *flag, const char *text, int64_t lo, int64_t hi,
                  int64_t *out) {
    /* A sign, then gp_parse_uint's digits (no blanks, no "+"): INT64_MIN's
     * magnitude is one more than INT64_MAX's. */
    const char *p = text + (text[0] == '-');
    uint64_t mag = 0;
    int bad = gp_parse_uint(p, NULL, 10, (uint64_t)INT64_MAX + (p != text), &mag) < 0;
    int64_t x = p == text ? (int64_t)mag : mag > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)mag;
    char range[64];
    if (hi == INT64_MAX)
        snprintf(range, sizeof range, "%lld or more", (long long)lo);
    else
        snprintf(range, sizeof range, "%lld to %lld", (long long)lo, (long long)hi);
    if (bad)
        return cli_usage(cmd, "%s: \"%s\" is not a whole number (%s)", flag, text, range);
    if (x < lo || x > hi)
        return cli_usage(cmd, "%s: %s is outside %s", flag, text, range);
    *out = x;
    return EXIT_OK;
}

int cli_parse_milli(const char *cmd, const char *flag, const char *text, const char *unit,
                    int64_t lo, int64_t hi, int64_t *out) {
    int64_t m;
    char a[32], b[32];
    gp_format_milli(lo, a, sizeof a);
    gp_format_milli(hi, b, sizeof b);
    if (gp_parse_milli(text, &m) < 0)
        return cli_usage(cmd, "%s: \"%s\" is not a number of %s (at most 3 decimals, %s to %s)",
                         flag, text, unit, a, b);
    if (m < lo || m > hi)
        return cli_usage(cmd, "%s: %s %s is outside %s to %s", flag, text, unit, a, b);
    *out = m;
    return EXIT_OK;
}

int cli_parse_size(const char *cmd, const char *flag, const char *text, int64_t *out) {
    if (gp_parse_size(text, out) < 0)
        return cli_usage(cmd, "%s: \"%s\" is not a size (like 512M, 20G, 1.5T)", flag, text);
    return EXIT_OK;
}

int cli_parse_duration(const char *cmd, const char *flag, const char *text, int64_t *out) {
    if (gp_parse_duration_ms(text, out) < 0)
        return cli_usage(cmd, "%s: \"%s\" is not a duration (like 30s, 10m, 2h)", flag, text);
    return EXIT_OK;
}
