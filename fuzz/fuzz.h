/*
 * fuzz.h — what the fuzz targets share: the input as a C string, for the
 * parsers that read text.
 */
#ifndef GP_FUZZ_H
#define GP_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The size bytes of data with a NUL after them (malloc'd; the caller
 * frees it), or NULL without memory. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text != NULL) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

#endif /* GP_FUZZ_H */
