/*
 * help-defaults.c — reads `gpupoold --help` on standard input and checks
 * that every default it names is the default: for each option whose text
 * says "default VALUE", a configuration with defaults given `--OPTION VALUE`
 * must come out unchanged. The defaults live in config.c's tables; the help
 * is written by hand, and this holds it to them (test-help-defaults.sh).
 * A VALUE that is a placeholder in capitals (DATA/logs) or a "default:"
 * sentence is not a value, and is passed over. Prints a TAP line per
 * default; exits 1 if any is wrong.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "daemon/config.h"

/* Checks the default in one option's text (its lines joined); returns 0 if
 * right or none, 1 if wrong. */
static int check(const char *entry, int *n) {
    char key[64];
    if (sscanf(entry, " --%63[a-z-]", key) != 1)
        return 0;
    const char *d = strstr(entry, "(default ");
    if (d == NULL)
        d = strstr(entry, "; default ");
    if (d == NULL)
        return 0;
    d = strstr(d, "default ") + strlen("default ");
    char val[128];
    size_t k = 0;
    /* The value ends at a blank, a ';', a ',', a ')' or a ':' that ends a
     * word ("0: off"), not the one of an address's port. */
    while (d[k] != '\0' && strchr(" ;,)", d[k]) == NULL &&
           !(d[k] == ':' && (d[k + 1] == ' ' || d[k + 1] == '\0')) && k + 1 < sizeof val) {
        val[k] = d[k];
        k++;
    }
    val[k] = '\0';
    if (k == 0 || (isupper((unsigned char)val[0]) && strchr(val, '/')))
        return 0;
    gpd__config def, got;
    gpd__config_defaults(&def);
    got = def;
    char err[512] = "";
    int rc = gpd__config_set(&got, key, val, err, sizeof err);
    int ok = rc == 0 && memcmp(&def, &got, sizeof def) == 0;
    printf("%s %d - --%s: the help's default %s is the default%s%s\n", ok ? "ok" : "not ok", ++*n,
           key, val,
           rc < 0 ? ": "
           : ok   ? ""
                  : " (it is not)",
           rc < 0 ? err : "");
    return !ok;
}

int main(void) {
    char line[512], entry[4096] = "";
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, stdin) != NULL) {
        if (strncmp(line, "  --", 4) == 0 || line[0] != ' ') {
            bad |= check(entry, &n);
            entry[0] = '\0';
        }
        /* The lines joined with one space, as the sentence reads. */
        char *p = line;
        while (*p == ' ')
            p++;
        p[strcspn(p, "\n")] = '\0';
        if (line[0] == ' ' && strlen(entry) + strlen(p) + 2 < sizeof entry) {
            strcat(entry, " ");
            strcat(entry, p);
        }
    }
    bad |= check(entry, &n);
    printf("1..%d\n", n);
    return bad;
}
