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

int gp_hex_digit(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int gp_parse_uint(const char *s, const char **end, int base, uint64_t max, uint64_t *out) {
    if (!s || (base != 10 && base != 16))
        return GP_EINVAL;
    uint64_t v = 0;
    const char *p = s;
    int d, over = 0;
    for (; (d = gp_hex_digit((unsigned char)*p)) >= 0 && d < base; p++)
        if (v > (max - (uint64_t)d) / (uint64_t)base || (uint64_t)d > max)
            over = 1;
        else
            v = v * (uint64_t)base + (uint64_t)d;
    if (p == s || (!end && *p != '\0'))
        return GP_EINVAL;
    if (over)
        return GP_ERANGE;
    if (end)
        *end = p;
    *out = v;
    return 0;
}

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

/* The prefixes of a size, each 1024 times the one before: K is 2^10 bytes. */
static const char size_prefixes[] = "KMGTP";
enum { NSIZE_PREFIXES = sizeof size_prefixes - 1 };

int gp_parse_size(const char *s, int64_t *out) {
    if (!s || !*s)
        return GP_EINVAL;
    const char *u = unit_of(s);
    int64_t mult = 1;
    const char *rest = u;
    for (int i = 0; i < NSIZE_PREFIXES; i++)
        if (toupper((unsigned char)*u) == size_prefixes[i]) {
            mult = INT64_C(1) << (10 * (i + 1));
            rest++;
        }
    if (mult > 1 && (*rest == 'i' || *rest == 'I'))
        rest++;
    if (*rest == 'B' || *rest == 'b')
        rest++;
    if (*rest != '\0')
        return GP_EINVAL;
    return scaled(s, u, mult, out);
}

/* The units of a duration, largest first, as a compound duration must write
 * them ("1d2h", "1m30s", "1s500ms"). */
static const struct {
    const char *name;
    int64_t ms;
} duration_units[] = {
    {"d", 86400 * 1000}, {"h", 3600 * 1000}, {"m", 60 * 1000}, {"s", 1000}, {"ms", 1},
};
enum { NDURATION_UNITS = sizeof duration_units / sizeof duration_units[0] };

int gp_parse_duration_ms(const char *s, int64_t *out) {
    if (!s || !*s)
        return GP_EINVAL;
    const char *u = unit_of(s);
    if (*u == '\0') /* a bare number is seconds */
        return scaled(s, u, 1000, out);
    /* One or more terms, each a number and a unit smaller than the one
     * before it, so that whatever gp_format_duration prints reads back. */
    int64_t total = 0;
    size_t next = 0; /* the first unit the next term may use */
    while (*s) {
        u = unit_of(s);
        size_t ulen = strspn(u, "dhms");
        size_t k = next;
        while (k < NDURATION_UNITS && (strlen(duration_units[k].name) != ulen ||
                                       strncmp(u, duration_units[k].name, ulen) != 0))
            k++;
        if (k == NDURATION_UNITS)
            return GP_EINVAL;
        int64_t v;
        int rc = scaled(s, u, duration_units[k].ms, &v);
        if (rc < 0)
            return rc;
        if (v > INT64_MAX - total)
            return GP_ERANGE;
        total += v;
        next = k + 1;
        s = u + ulen;
    }
    *out = total;
    return 0;
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
    for (int i = NSIZE_PREFIXES - 1; i >= 0; i--) {
        int64_t m = INT64_C(1) << (10 * (i + 1));
        /* Use a unit when the value is at least one of it and exact to 0.01. */
        if (bytes >= m && ((__int128)bytes * 100) % m == 0) {
            const char unit[] = {size_prefixes[i], '\0'};
            format_scaled(bytes, m, 2, unit, buf, len);
            return;
        }
    }
    snprintf(buf, len, "%lld", (long long)bytes);
}

void gp_format_milli(int64_t milli, char *buf, size_t len) {
    if (milli < 0 && len > 1) {
        /* A sign and the magnitude (INT64_MIN's as INT64_MAX's), as a
         * duration's: the remainder of a negative is negative. */
        buf[0] = '-';
        format_scaled(milli == INT64_MIN ? INT64_MAX : -milli, 1000, 3, "", buf + 1, len - 1);
        return;
    }
    format_scaled(milli, 1000, 3, "", buf, len);
}

void gp_format_duration(int64_t ms, char *buf, size_t len) {
    if (len == 0)
        return;
    if (ms == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    if (ms < 0) {
        /* A sign and the magnitude (INT64_MIN, which has none, as INT64_MAX:
         * no clock gives a negative interval of 292 million years). */
        snprintf(buf, len, "-");
        gp_format_duration(ms == INT64_MIN ? INT64_MAX : -ms, buf + 1, len - 1);
        return;
    }
    if (ms < 1000) {
        snprintf(buf, len, "%lldms", (long long)ms);
        return;
    }
    /* Days, hours and minutes as whole units; the rest as seconds with the
     * milliseconds as a fraction ("1m1.5s"), which reads back exactly. */
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < 3 && n < len; k++) {
        int64_t v = ms / duration_units[k].ms;
        if (v == 0)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%lld%s", (long long)v, duration_units[k].name);
        ms %= duration_units[k].ms;
    }
    if (ms && n < len)
        format_scaled(ms, 1000, 3, "s", buf + n, len - n);
}
