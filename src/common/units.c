/*
 * units.c — exact parsing and printing of sizes, durations, milli-GPU amounts
 * and signal names (see units.h). Decimal fractions are carried as integers
 * (digits and a power of ten) all the way, so "0.1" GPU is exactly 100
 * milli-GPU and never 99 after a round trip through a double.
 */
#include "common/units.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/gp_error.h"

/*
 * Reads "123" or "123.456" from *sp and returns the value times mult in *out.
 * The result must be a whole number (no fraction of the unit is lost) and fit
 * in an int64_t. Advances *sp past the number on success.
 */
static int decimal_times(const char **sp, int64_t mult, int64_t *out) {
    const char *s = *sp;
    int64_t whole = 0, frac = 0, pow10 = 1;
    int digits = 0;
    while (isdigit((unsigned char)*s)) {
        if (whole > (INT64_MAX - 9) / 10)
            return GP_ERANGE;
        whole = whole * 10 + (*s++ - '0');
        digits++;
    }
    if (*s == '.') {
        s++;
        while (isdigit((unsigned char)*s)) {
            if (pow10 > INT64_MAX / 10 / 1000)
                return GP_EINVAL;
            frac = frac * 10 + (*s++ - '0');
            pow10 *= 10;
            digits++;
        }
    }
    if (digits == 0)
        return GP_EINVAL;
    if (whole > INT64_MAX / mult)
        return GP_ERANGE;
    /* frac/pow10 * mult must be whole: frac * mult divisible by pow10. */
    __int128 f = (__int128)frac * mult;
    if (f % pow10 != 0)
        return GP_EINVAL;
    __int128 total = (__int128)whole * mult + f / pow10;
    if (total > INT64_MAX)
        return GP_ERANGE;
    *out = (int64_t)total;
    *sp = s;
    return 0;
}

/* Where the unit of s begins: after its digits and decimal point. The unit is
 * found first, so that the number is scaled exactly once. */
static const char *unit_of(const char *s) {
    while (isdigit((unsigned char)*s) || *s == '.')
        s++;
    return s;
}

/* The number s..u (digits, one optional fraction) times mult, exactly, into
 * *out; GP_EINVAL if it is not a number ending at u, GP_ERANGE if too big. */
static int scaled(const char *s, const char *u, int64_t mult, int64_t *out) {
    int64_t v;
    int rc = decimal_times(&s, mult, &v);
    if (rc < 0)
        return rc;
    if (s != u)
        return GP_EINVAL;
    *out = v;
    return 0;
}

int gp_parse_size(const char *s, int64_t *out) {
    if (!s || !*s)
        return GP_EINVAL;
    const char *u = unit_of(s);
    int64_t mult = 1;
    const char *rest = u;
    switch (toupper((unsigned char)*u)) {
    case 'K':
        mult = INT64_C(1) << 10;
        rest++;
        break;
    case 'M':
        mult = INT64_C(1) << 20;
        rest++;
        break;
    case 'G':
        mult = INT64_C(1) << 30;
        rest++;
        break;
    case 'T':
        mult = INT64_C(1) << 40;
        rest++;
        break;
    case 'P':
        mult = INT64_C(1) << 50;
        rest++;
        break;
    default:
        break;
    }
    if (mult > 1 && (*rest == 'i' || *rest == 'I'))
        rest++;
    if (*rest == 'B' || *rest == 'b')
        rest++;
    if (*rest != '\0')
        return GP_EINVAL;
    return scaled(s, u, mult, out);
}

int gp_parse_duration_ms(const char *s, int64_t *out) {
    if (!s || !*s)
        return GP_EINVAL;
    const char *u = unit_of(s);
    int64_t mult;
    if (*u == '\0' || strcmp(u, "s") == 0)
        mult = 1000;
    else if (strcmp(u, "ms") == 0)
        mult = 1;
    else if (strcmp(u, "m") == 0)
        mult = 60 * 1000;
    else if (strcmp(u, "h") == 0)
        mult = 3600 * 1000;
    else if (strcmp(u, "d") == 0)
        mult = 86400 * 1000;
    else
        return GP_EINVAL;
    return scaled(s, u, mult, out);
}

int gp_parse_milli(const char *s, int64_t *out) {
    if (!s || !*s)
        return GP_EINVAL;
    const char *p = s;
    int64_t v;
    int rc = decimal_times(&p, 1000, &v);
    if (rc < 0)
        return rc;
    if (*p != '\0')
        return GP_EINVAL;
    *out = v;
    return 0;
}

/* The signals a checkpoint handler may reasonably listen for. */
static const struct {
    const char *name;
    int sig;
} signals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"CONT", SIGCONT},
    {"STOP", SIGSTOP}, {"ALRM", SIGALRM}, {"XCPU", SIGXCPU}, {"PWR", SIGPWR},
};

int gp_parse_signal(const char *s, int *out) {
    if (!s || !*s)
        return GP_EINVAL;
    if (isdigit((unsigned char)s[0])) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end || v < 1 || v > 64)
            return GP_EINVAL;
        *out = (int)v;
        return 0;
    }
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (strcasecmp(s, signals[i].name) == 0) {
            *out = signals[i].sig;
            return 0;
        }
    return GP_EINVAL;
}

const char *gp_signal_name(int sig) {
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (signals[i].sig == sig)
            return signals[i].name;
    return NULL;
}

/* Writes v/div with up to `digits` fractional digits, trailing zeros dropped. */
static void format_scaled(int64_t v, int64_t div, int digits, const char *suffix, char *buf,
                          size_t len) {
    int64_t whole = v / div, rem = v % div;
    if (rem == 0) {
        snprintf(buf, len, "%lld%s", (long long)whole, suffix);
        return;
    }
    int64_t p10 = 1;
    for (int i = 0; i < digits; i++)
        p10 *= 10;
    int64_t frac = (int64_t)((__int128)rem * p10 / div);
    while (digits > 0 && frac % 10 == 0) {
        frac /= 10;
        digits--;
    }
    snprintf(buf, len, "%lld.%0*lld%s", (long long)whole, digits, (long long)frac, suffix);
}

void gp_format_size(int64_t bytes, char *buf, size_t len) {
    static const char *const units[] = {"P", "T", "G", "M", "K"};
    for (int i = 0; i < 5; i++) {
        int64_t m = INT64_C(1) << (10 * (5 - i));
        /* Use a unit when the value is at least one of it and exact to 0.01. */
        if (bytes >= m && ((__int128)bytes * 100) % m == 0) {
            format_scaled(bytes, m, 2, units[i], buf, len);
            return;
        }
    }
    snprintf(buf, len, "%lld", (long long)bytes);
}

void gp_format_milli(int64_t milli, char *buf, size_t len) {
    format_scaled(milli, 1000, 3, "", buf, len);
}

void gp_format_duration(int64_t ms, char *buf, size_t len) {
    if (ms < 1000 && ms != 0) {
        snprintf(buf, len, "%lldms", (long long)ms);
        return;
    }
    int64_t s = ms / 1000;
    int64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    size_t n = 0;
    buf[0] = '\0';
    if (d)
        n += (size_t)snprintf(buf + n, len - n, "%lldd", (long long)d);
    if (h && n < len)
        n += (size_t)snprintf(buf + n, len - n, "%lldh", (long long)h);
    if (m && n < len)
        n += (size_t)snprintf(buf + n, len - n, "%lldm", (long long)m);
    if ((sec || n == 0) && n < len)
        snprintf(buf + n, len - n, "%llds", (long long)sec);
}
