/*
 * gp_submit.h — the fields of a workload submission (the JSON body of POST
 * /api/v1/workloads), described once.
 *
 * GP_SUBMIT_FIELDS lists every field with its JSON name, whether it is
 * required, the flag of `gpupool submit` that sets it (NULL: none), its
 * type, its range, the word the CLI's help and messages use for its value,
 * the unit of an amount, and a sentence of documentation. From it come the
 * daemon's list of known fields and the order, typing and ranges of its
 * parse (src/daemon/request.c, through gp_field_out_of_range), the CLI's
 * submit flags (src/cli/cmd-workloads.c) and the field table of docs/api.md
 * (gp_fields_doc_table; checked by tests/common/test-submit-fields.sh, which
 * also holds the console's form, the CLI's help and its shell completion to
 * these names). Fields are validated in the order listed: a later field may
 * rely on an earlier one (min_gang on gang, gpu_compute on gpu).
 *
 * Ranges are in the field's unit as the daemon holds it: milli for an
 * amount with decimals (gpu 1000 is one GPU), bytes, milliseconds, whole
 * numbers; INT64_MAX means no upper bound.
 */
#ifndef GP_SUBMIT_H
#define GP_SUBMIT_H

#include <stdint.h>
#include <stdio.h>

#include "common/gp_names.h"
#include "common/gp_queue.h"

/* The most tasks of one workload. */
#define GP_SUBMIT_MAX_GANG 256
/* The most CPU one task may ask for (milli-CPU), and a project's default_cpu
 * give it. */
#define GP_SUBMIT_CPU_MAX INT64_C(1000000000)
/* The most whole GPUs one task may ask for: no node has more
 * (GP_MAX_GPUS_PER_NODE, which request.c holds it to). */
#define GP_SUBMIT_GPUS_MAX 16
/* A workload's priority within its project is -max..max. */
#define GP_SUBMIT_PRIORITY_MAX 1000
/* The grace period between the checkpoint signal and the kill: its default
 * in seconds, and its longest in hours. */
#define GP_SUBMIT_GRACE_DEFAULT_S 30
#define GP_SUBMIT_GRACE_MAX_H     24

/* The types of a field's value, each with what a value of it is in the words
 * of docs/api.md's table: X(type, words). A string's meaning is its field's. */
#define GP_SUBMIT_TYPES(X)                                                                         \
    X(GP_SUBMIT_STRING, "string")                                                                  \
    X(GP_SUBMIT_ARGV, "list of strings")       /* the CLI: what follows -- */                      \
    X(GP_SUBMIT_LIST, "list of names")         /* the CLI: a flag given again adds one */          \
    X(GP_SUBMIT_MAP, "object of NAME: string") /* the CLI: NAME=VALUE, repeatable */               \
    X(GP_SUBMIT_MILLI, "number (3 decimals at most), or one as a string")                          \
    X(GP_SUBMIT_SIZE, "bytes, or a size like `\"32G\"`")                                           \
    X(GP_SUBMIT_DURATION, "seconds, or a duration like `\"60s\"`")                                 \
    X(GP_SUBMIT_INT, "whole number")                                                               \
    X(GP_SUBMIT_TRUE, "`true` or `false`")  /* the CLI's flag sends true */                        \
    X(GP_SUBMIT_FALSE, "`true` or `false`") /* the CLI's flag sends false */                       \
    /* A queue's (GP_QUEUE_FIELDS, gp_queue.h): */                                                 \
    X(GP_SUBMIT_QUOTA, "object of `gpu` and `cpu` (numbers, 3 decimals at most) and `memory` "     \
                       "(bytes or a size)") /* the CLI: a flag for each resource */                \
    X(GP_SUBMIT_WEIGHT, "whole number, or an object of one for each of `gpu`, `cpu`, `memory`")    \
    X(GP_SUBMIT_BOUND, "seconds or a duration; `0`, `\"none\"` or `null`: no bound")               \
    X(GP_SUBMIT_MODE, "an eviction mode; `null`: none of its own") /* the CLI: MODE or inherit */

typedef enum gp_submit_type {
#define GP_SUBMIT_TYPE_ENUM_(type, words) type,
    GP_SUBMIT_TYPES(GP_SUBMIT_TYPE_ENUM_)
#undef GP_SUBMIT_TYPE_ENUM_
} gp_submit_type;

#define GP_SUBMIT_NO_MAX INT64_MAX

/* X(name, required, flag, type, lo, hi, arg, unit, help) */
#define GP_SUBMIT_FIELDS(X)                                                                        \
    X(project, 1, "--project", GP_SUBMIT_STRING, 0, 0, "P", "",                                    \
      "a project (a queue under a department)")                                                    \
    X(name, 0, "--name", GP_SUBMIT_STRING, 0, 0, "NAME", "", "a label for people")                 \
    X(command, 1, NULL, GP_SUBMIT_ARGV, 0, 0, "COMMAND", "",                                       \
      "program and arguments, e.g. `[\"python\", \"train.py\"]` (the CLI: what follows `--`)")     \
    X(env, 0, "--env", GP_SUBMIT_MAP, 0, 0, "NAME=VALUE", "",                                      \
      "environment variables; not `GPUPOOL_*` nor `CUDA_VISIBLE_DEVICES`, which gpupool sets "     \
      "(`src/common/gp_env.h`); an `LD_PRELOAD` of its own runs behind the interposer; at most "   \
      "1,024 variables, names of at most 256 bytes, values of at most 32 KiB, 128 KiB of "         \
      "`NAME=VALUE` in all")                                                                       \
    X(workdir, 0, "--workdir", GP_SUBMIT_STRING, 0, 0, "DIR", "",                                  \
      "absolute working directory (the CLI sends the current one unless told)")                    \
    X(run_as, 0, NULL, GP_SUBMIT_STRING, 0, 0, "USER", "",                                         \
      "the Unix user it runs as: written by the daemon from the token; a request that gives it "   \
      "is refused")                                                                                \
    X(gpu, 0, "--gpu", GP_SUBMIT_MILLI, 1, GP_SUBMIT_GPUS_MAX * 1000, "N", "GPUs",                 \
      "whole GPUs (`1`, `2`, ... up to " GP_STR(                                                   \
          GP_SUBMIT_GPUS_MAX) ") or a fraction of one "                                            \
                              "(`0.25`, `\"0.5\"`); more GPUs than one node has are a gang of "    \
                              "tasks (`gang`)")                                                    \
    X(gpu_memory, 0, "--gpu-memory", GP_SUBMIT_SIZE, 1, GP_SUBMIT_NO_MAX, "SIZE", "",              \
      "an amount of one GPU's memory, e.g. `\"20G\"` (instead of `gpu`)")                          \
    X(mig, 0, "--mig", GP_SUBMIT_STRING, 0, 0, "PROFILE", "",                                      \
      "one MIG instance of a profile, e.g. `\"1g.18gb\"` (instead of `gpu`)")                      \
    X(models, 0, "--model", GP_SUBMIT_LIST, 0, 0, "M", "", "allowed GPU models (default: any)")    \
    X(selectors, 0, "--selector", GP_SUBMIT_MAP, 0, 0, "LABEL=VALUE", "",                          \
      "node labels: only nodes carrying them")                                                     \
    X(gpu_compute, 0, "--gpu-compute", GP_SUBMIT_MILLI, 10, 1000, "F", "of the GPU's time",        \
      "with a slice (`gpu` below 1, or `gpu_memory`): its share of the GPU's time (`\"0.3\"`: "    \
      "30 %), paced by the interposer; shown in `spec` and, for running slices, in "               \
      "`/api/v1/nodes`")                                                                           \
    X(cpu, 0, "--cpu", GP_SUBMIT_MILLI, 0, GP_SUBMIT_CPU_MAX, "N", "CPUs", "cores per task")       \
    X(memory, 0, "--memory", GP_SUBMIT_SIZE, 0, GP_SUBMIT_NO_MAX, "SIZE", "",                      \
      "host memory per task, e.g. `\"32G\"`")                                                      \
    X(gang, 0, "--gang", GP_SUBMIT_INT, 1, GP_SUBMIT_MAX_GANG, "N", "",                            \
      "tasks that start together or not at all")                                                   \
    X(min_gang, 0, "--min-gang", GP_SUBMIT_INT, 1, GP_SUBMIT_MAX_GANG, "N", "",                    \
      "an elastic gang: start with at least this many of its tasks (at most `gang`)")              \
    X(kind, 0, "--kind", GP_SUBMIT_STRING, 0, 0, "K", "",                                          \
      "`train` (preemptible; the default), `interactive` or `inference`")                          \
    X(interactive, 0, "--interactive", GP_SUBMIT_TRUE, 0, 0, "", "",                               \
      "true: the kind `interactive` (not preemptible; fits in the project's deserved quota)")      \
    X(tty, 0, NULL, GP_SUBMIT_TRUE, 0, 0, "", "",                                                  \
      "true: a terminal (`gpupool run -it`); the kind `interactive`, one task")                    \
    X(priority, 0, "--priority", GP_SUBMIT_INT, -GP_SUBMIT_PRIORITY_MAX, GP_SUBMIT_PRIORITY_MAX,   \
      "N", "", "within the project (higher first)")                                                \
    X(preemptible, 0, "--no-preempt", GP_SUBMIT_FALSE, 0, 0, "", "",                               \
      "overrides the kind's default")                                                              \
    X(same_domain, 0, "--same-domain", GP_SUBMIT_TRUE, 0, 0, "", "",                               \
      "all tasks in one topology domain (NVLink island, rack)")                                    \
    X(grace, 0, "--grace", GP_SUBMIT_DURATION, 0, (int64_t)GP_SUBMIT_GRACE_MAX_H * 3600 * 1000,    \
      "DURATION", "",                                                                              \
      "checkpoint signal to kill (default " GP_STR(GP_SUBMIT_GRACE_DEFAULT_S) " s)")               \
    X(min_runtime, 0, "--min-runtime", GP_SUBMIT_DURATION, 0, GP_SUBMIT_NO_MAX, "DURATION", "",    \
      "not evicted for fair-share rebalancing or preemption before this long, bounded by the "     \
      "project's `min_runtime_max`; never against a deserved quota's reclaim")                     \
    X(checkpoint_signal, 0, "--signal", GP_SUBMIT_STRING, 0, 0, "SIG", "",                         \
      "`\"TERM\"` (default), `\"USR1\"`, ...")                                                     \
    X(on_preempt, 0, "--on-preempt", GP_SUBMIT_STRING, 0, 0, "MODE", "",                           \
      "how it is evicted (reclaim, preemption, consolidation): `pause` (its GPU state moved to "   \
      "host memory and the task frozen, resumed on the same node; checkpoint where the node "      \
      "cannot pause), `checkpoint` (the checkpoint signal, the grace period, then stop) or "       \
      "`requeue` (stopped at once); default: its project's (`on_preempt` of the queue)")           \
    X(client_key, 0, "--key", GP_SUBMIT_STRING, 0, 0, "KEY", "",                                   \
      "idempotency key: the same key again answers 200 with the first workload")

/* One field of the list, or of a queue's (GP_QUEUE_FIELDS). */
typedef struct gp_field {
    const char *name; /* in the JSON body */
    int required;     /* a submission's: must be given; a queue's: only when it is created */
    const char *flag; /* of `gpupool submit` (`gpupool queue`); NULL: none */
    gp_submit_type type;
    int64_t lo, hi;   /* for the numbers (a quota's: of its GPUs and CPUs) */
    const char *arg;  /* the value's word in the CLI's help ("" for a bare flag) */
    const char *unit; /* of an amount, in the CLI's messages ("GPUs") */
    const char *help;
} gp_field;

/* Every field, in the order of the list. */
enum {
#define GP_SUBMIT_ENUM_(name, req, flag, type, lo, hi, arg, unit, help) GP_SUBMIT_F_##name,
    GP_SUBMIT_FIELDS(GP_SUBMIT_ENUM_)
#undef GP_SUBMIT_ENUM_
        GP_SUBMIT_NFIELDS
};

extern const gp_field gp_submit_fields[GP_SUBMIT_NFIELDS];

/* The field whose JSON name is name, or NULL. */
const gp_field *gp_submit_find(const char *name);

/* The values field f takes, as docs/api.md's tables say them ("0.001 to
 * 16", "above 0", an eviction mode's "checkpoint, pause or requeue"); ""
 * for a field without a range. */
void gp_field_range(const gp_field *f, char *buf, size_t len);

/* Whether x, a value of number field f in its unit, is outside f's range:
 * 1 with why saying so in the words of docs/api.md's tables, without the
 * field's name ("1.5 of the GPU's time is outside 0.01 to 1", "1d1h is
 * outside 0s to 1d", "must be above 0" for a lo of 1; a bound's 0 is none,
 * within); 0 if it is within, or f is not a number. The daemon's check and
 * gpupool's, of a submission's fields and of a queue's. */
int gp_field_out_of_range(const gp_field *f, int64_t x, char *why, size_t len);

/* Writes the field table of docs/api.md for fields[0..n): a submission's
 * ("Submitting a workload") with cmd "submit", a queue's ("Queues") with
 * cmd "queue"; once marks a field whose required is set ("(required)"). */
void gp_fields_doc_table(FILE *f, const gp_field *fields, int n, const char *cmd, const char *once);

/* ---- A queue's fields (GP_QUEUE_FIELDS, gp_queue.h) ---------------------- */

/* Every field of a queue, in the order of the list. */
enum {
#define GP_QUEUE_ENUM_(name, create, flag, type, lo, hi, arg, unit, help) GP_QUEUE_F_##name,
    GP_QUEUE_FIELDS(GP_QUEUE_ENUM_)
#undef GP_QUEUE_ENUM_
        GP_QUEUE_NFIELDS
};

extern const gp_field gp_queue_fields[GP_QUEUE_NFIELDS];

/* One resource of a quota or a weight as a field of its own: a quota's GPUs
 * and CPUs are amounts in f's range ("GPUs", "CPUs"), its memory a size;
 * a weight's each a whole number in f's range. The name is the resource's
 * (its key in the field's object); the flag is f's for the GPUs,
 * "--cpu-deserved" and the like for the others. */
typedef struct gp_queue_part {
    gp_field f;
    char flag[48], arg[24];
} gp_queue_part;

/* Fills p with resource r (an index of GP_RESOURCES) of field f. */
void gp_queue_part_of(const gp_field *f, int r, gp_queue_part *p);

#endif /* GP_SUBMIT_H */
