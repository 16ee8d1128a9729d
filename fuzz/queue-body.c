/*
 * queue-body.c — fuzz target for the bodies of POST and PATCH
 * /api/v1/queues: the first byte chooses creation or change, the rest is the
 * JSON body given to gpd__queue_parse, as the API parses it.
 */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "daemon/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    int create = data[0] & 1;
    json_t *j = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return 0;
    }
    gp_queue_spec q;
    gp_queue_spec_init(&q, "fuzz", "dept");
    gpd__err e = {0};
    if (gpd__queue_parse(j, create, &q, &e) == 0) {
        for (int r = 0; r < GP_RES_COUNT; r++)
            if (q.quota[r].deserved < 0 ||
                (q.quota[r].limit != GP_UNLIMITED && q.quota[r].limit < q.quota[r].deserved))
                __builtin_trap();
        /* The per-task defaults: none, or within what a submission may ask. */
        if (q.default_cpu_milli < 0 || q.default_cpu_milli > GPD__DEFAULT_CPU_MAX ||
            q.default_mem_bytes < 0)
            __builtin_trap();
        /* The interactive bounds: none, or 10s to 365 days. */
        const int64_t bounds[] = {q.idle_gpu_timeout, q.max_session_length};
        for (int b = 0; b < 2; b++)
            if (bounds[b] != 0 &&
                (bounds[b] < GPD__SESSION_BOUND_MIN_MS || bounds[b] > INT64_C(365) * 86400 * 1000))
                __builtin_trap();
    } else if (!e.msg[0]) {
        __builtin_trap();
    }
    json_decref(j);
    return 0;
}
