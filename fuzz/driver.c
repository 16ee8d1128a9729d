/*
 * driver.c — the main() of every fuzz target built without libFuzzer: it
 * feeds LLVMFuzzerTestOneInput each file named on the command line, and each
 * file inside each directory named, so that the corpora in fuzz/corpus/ are
 * replayed as a regression run by `make test` (under the sanitizers in its
 * second pass) on machines without clang. libFuzzer builds (`make fuzz`)
 * bring their own main() and leave this file out.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX (1 << 20)

/* Runs one file; returns 0, or -1 if it cannot be read. */
static int run_file(const char *path, uint8_t *buf) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t n = fread(buf, 1, INPUT_MAX, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir in name order; returns the count, or -1. */
static int run_dir(const char *dir, uint8_t *buf) {
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn)
                break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (names[i] && stat(path, &st) == 0 && S_ISREG(st.st_mode) && run_file(path, buf) == 0)
            count++;
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv) {
    uint8_t *buf = malloc(INPUT_MAX);
    if (!buf)
        return 1;
    int total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int n = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i], buf)
                                                               : (run_file(argv[i], buf) == 0);
        if (n < 0) {
            free(buf);
            return 1;
        }
        total += n;
    }
    free(buf);
    printf("%d inputs replayed\n", total);
    return 0;
}
