/*
 * request.c — fuzz target for the validation of a workload submission (the
 * body of POST /api/v1/workloads): JSON parsing as the API does it, then
 * gpd__request_parse and, for an accepted request, its canonical form, which
 * must be accepted again (it is what a restart reads back from the store).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return 0;
    }
    gpd__request r;
    gpd__err e = {0};
    memset(&r, 0, sizeof r);
    if (gpd__request_parse(j, &r, &e) == 0) {
        char *canon = gpd__request_canonical(j);
        json_t *again = canon ? json_loads(canon, 0, NULL) : NULL;
        gpd__request r2;
        memset(&r2, 0, sizeof r2);
        if (again && gpd__request_parse(again, &r2, &e) != 0)
            __builtin_trap();
        json_decref(again);
        free(canon);
    } else if (!e.msg[0]) {
        __builtin_trap(); /* every rejection says why */
    }
    json_decref(j);
    return 0;
}
