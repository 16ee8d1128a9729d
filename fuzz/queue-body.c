/*
 * queue-body.c — fuzz target for the bodies of POST and PATCH
 * /api/v1/queues: the first byte chooses creation or change, the rest is the
 * JSON body given to gpd__queue_parse, as the API parses it.
 */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "common/gp_queue.h"
#include "common/gp_submit.h"
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
        /* Every number within its field's range (GP_QUEUE_FIELDS): the
         * per-task defaults none or what a submission may ask, the
         * interactive bounds none or 10s to 365 days. */
        const struct {
            int field;
            int64_t v;
        } kept[] = {
            {GP_QUEUE_F_priority, q.priority},
            {GP_QUEUE_F_min_runtime_max, q.min_runtime_max},
            {GP_QUEUE_F_reclaim_grace_max, q.reclaim_grace_max},
            {GP_QUEUE_F_idle_gpu_timeout, q.idle_gpu_timeout},
            {GP_QUEUE_F_max_session_length, q.max_session_length},
            {GP_QUEUE_F_default_cpu, q.default_cpu_milli},
            {GP_QUEUE_F_default_memory, q.default_mem_bytes},
        };
        char why[128];
        for (size_t k = 0; k < sizeof kept / sizeof *kept; k++)
            if (gp_field_out_of_range(&gp_queue_fields[kept[k].field], kept[k].v, why, sizeof why))
                __builtin_trap();
    } else if (!e.msg[0]) {
        __builtin_trap();
    }
    json_decref(j);
    return 0;
}
