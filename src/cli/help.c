/*
 * help.c — the help text of every gpupool command, good enough to need no
 * other documentation (docs/cli.md and the man page repeat it).
 */
#include <string.h>

#include "cli/cli.h"
#include "common/gp_queue.h"
#include "common/gp_submit.h"

/* The bounds and defaults of a submission and of a queue that the help names. */
#define GANG_MAX            GP_STR(GP_SUBMIT_MAX_GANG)
#define PRIORITY_MAX        GP_STR(GP_SUBMIT_PRIORITY_MAX)
#define GRACE_DEFAULT       GP_STR(GP_SUBMIT_GRACE_DEFAULT_S)
#define RUNTIME_MAX_DEFAULT GP_STR(GP_QUEUE_MIN_RUNTIME_MAX_DEFAULT_M)
#define GRACE_MAX_DEFAULT   GP_STR(GP_QUEUE_RECLAIM_GRACE_MAX_DEFAULT_M)
#define GRACE_MAX_MAX       GP_STR(GP_QUEUE_RECLAIM_GRACE_MAX_MAX_H)
#define SESSION_BOUND_MIN   GP_STR(GP_QUEUE_SESSION_BOUND_MIN_S)
#define SESSION_BOUND_MAX   GP_STR(GP_QUEUE_SESSION_BOUND_MAX_D)
#define RUNTIME_MAX_MAX     GP_STR(GP_QUEUE_MIN_RUNTIME_MAX_MAX_D)
#define WEIGHT_MAX          GP_STR(GP_QUEUE_WEIGHT_MAX)
#define QPRIORITY_MAX       GP_STR(GP_QUEUE_PRIORITY_MAX)

static const struct {
    const char *cmd, *text;
} texts[] = {
    {"submit",
     "usage: gpupool submit --project P [REQUEST] [OPTIONS] -- COMMAND [ARGS...]\n"
     "\n"
     "Request (per task; at most one of the first three; none: no GPU):\n"
     "  --gpu N            whole GPUs (1, 2, ...) or a fraction of one (0.25, 0.5)\n"
     "  --gpu-memory SIZE  an amount of one GPU's memory, e.g. 20G\n"
     "  --gpu-compute F    with a slice: its share of the GPU's time (0.3: 30%),\n"
     "                     paced by the interposer (default: not limited)\n"
     "  --mig PROFILE      one MIG instance, e.g. 1g.18gb\n"
     "  --cpu N            cores (0.5 allowed)        --memory SIZE  host memory, e.g. 32G\n"
     "Options:\n"
     "  --gang N           N tasks that start together or not at all (1.." GANG_MAX ")\n"
     "  --min-gang N       an elastic gang: start with at least N of them\n"
     "  --same-domain      all tasks in one topology domain (NVLink island, rack)\n"
     "  --model M          allowed GPU model (repeatable; default: any)\n"
     "  --selector L=V     only nodes carrying this label (repeatable)\n"
     "  --min-runtime D    not evicted for fair share before this long (bounded by\n"
     "                     the project's min_runtime_max, " RUNTIME_MAX_DEFAULT
     "m unless an admin set\n"
     "                     another; never against a deserved quota)\n"
     "  --interactive      not preemptible; must fit in the project's deserved quota\n"
     "  --kind K           train (default), interactive or inference\n"
     "  --no-preempt       never evict this workload\n"
     "  --priority N       within the project, -" PRIORITY_MAX ".." PRIORITY_MAX " (higher first)\n"
     "  --grace DURATION   time between the checkpoint signal and the kill (default " GRACE_DEFAULT
     "s)\n"
     "  --signal SIG       the checkpoint signal (default TERM)\n"
     "  --on-preempt MODE  how it is evicted (reclaim, preemption, consolidation):\n"
     "                     pause (its GPU state kept in host memory, the task frozen\n"
     "                     and resumed where it was; checkpoint where the node cannot\n"
     "                     pause), checkpoint (the signal, the grace period, then stop)\n"
     "                     or requeue (stopped at once); default: the project's\n"
     "  --name NAME        a label for people\n"
     "  --env NAME=VALUE   repeatable\n"
     "  --workdir DIR      default: the current directory\n"
     "  --key KEY          idempotency key: resubmitting the same key returns the first workload\n"
     "  --json             print the server's answer\n"
     "\n"
     "The workload gets GPUPOOL_CHECKPOINT_DIR, a directory that survives evictions\n"
     "and restarts: save checkpoints there on the checkpoint signal, and resume from\n"
     "them at start. Fractional slices also get GPUPOOL_MEMORY_LIMIT (bytes).\n"},
    {"list",
     "usage: gpupool list [--project P] [--user U] [--state S] [--all] [--limit N] "
     "[--sort ORDER] [--cursor C] [--after ID] [--json]\n"
     "\n"
     "Without --state or --all, lists active workloads (pending, starting, running,\n"
     "stopping, paused). States: pending starting running stopping paused suspended\n"
     "succeeded failed deleted. INFO shows why a pending workload waits, or how one ended.\n"
     "--sort orders by id (the default), submitted, state, project, user or name;\n"
     "a leading - reverses (-submitted: newest first). A full page ends with the\n"
     "--cursor (or, in id order, --after) that lists the next.\n"},
    {"describe", "usage: gpupool describe ID [--json]\n"
                 "\n"
                 "Shows a workload: its request, state, why it waits (a sentence you can act on),\n"
                 "where its tasks run, every attempt with its outcome, and its event history.\n"},
    {"run", "usage: gpupool run -it [--project P] [REQUEST] [--preemptible] [submit's options] "
            "[-- COMMAND [ARGS...]]\n"
            "\n"
            "Submits an interactive workload with a terminal, prints its id, waits until it\n"
            "runs and attaches (COMMAND: your login shell when none is given). The request\n"
            "is submit's (--gpu 0.25, --gpu-memory 10G, --cpu N, --env ...). It starts only\n"
            "within the project's deserved quota and is not preempted there; --preemptible\n"
            "lets it borrow beyond, where it may be evicted.\n"
            "Ctrl-P Ctrl-Q detaches (the workload keeps running; gpupool attach ID returns).\n"
            "Exits with the command's status once it has started (gpupool help exit-codes).\n"},
    {"attach", "usage: gpupool attach ID\n\nAttaches to an interactive workload's terminal: "
               "its recent output first,\nthen what you type goes to it. Ctrl-P Ctrl-Q "
               "detaches. A suspended or paused\nsession (by its owner, or by its project's "
               "idle GPU timeout) is resumed\nfirst, and attach waits until it runs again: a "
               "paused one where it was, a\nsuspended one's command from the beginning.\n"},
    {"exec", "usage: gpupool exec [-it] ID -- COMMAND [ARGS...]\n\nRuns COMMAND in the "
             "workload's task (its user, cgroups, namespaces and\nenvironment); -it gives it "
             "a terminal. Exits with its status.\n"},
    {"port-forward",
     "usage: gpupool port-forward ID [LOCAL:]REMOTE\n\nListens on 127.0.0.1:LOCAL (default "
     "REMOTE; 0: any free port) and carries each\nconnection to port REMOTE inside the "
     "workload's task, until Ctrl-C. Refused\n(not yours, not running, not interactive) it "
     "exits at once with the reason.\n"},
    {"notebook", "usage: gpupool notebook [--project P] [--gpu 0.25] [REQUEST] [--local-port N]\n"
                 "\nStarts Jupyter in an interactive workload and prints its local URL with\n"
                 "Jupyter's token, then forwards to it until Ctrl-C (gpupool delete ID ends "
                 "it).\nJupyter's --allow-root is passed only when the daemon says this "
                 "token's tasks run\nas root. The console's Start a notebook submits the "
                 "same; reach it with\ngpupool port-forward ID LOCAL:PORT as its page says.\n"},
    {"logs", "usage: gpupool logs [-f] [--task N] ID\n\nPrints a task's output; -f follows it "
             "until the workload ends.\nA log is capped (the local executor's log_max, 64M, one "
             "older part kept) and\nremoved --log-retention (7d) after its workload ends; "
             "output rotated away is\nskipped. On a terminal, control characters (but "
             "newline, tab and carriage\nreturn) and escape sequences other than colours are "
             "shown as text (\\x1b), so\nthat a workload's output cannot drive the terminal of "
             "whoever reads it; piped\nor redirected, the output is as the task wrote it.\n"},
    {"delete",
     "usage: gpupool delete ID...\n\nDeletes workloads; running tasks are killed at once.\n"},
    {"suspend", "usage: gpupool suspend ID...\n\nSends the checkpoint signal, waits the grace "
                "period, stops the tasks and\n"
                "keeps the workload (with its checkpoint directory) until `gpupool resume`.\n"},
    {"resume", "usage: gpupool resume ID...\n\nPuts suspended workloads back in the queue.\n"},
    {"usage",
     "usage: gpupool usage [--from T] [--to T] [--step D] [--by queue|user|node] [--price N]\n"
     "                     [--csv|--json]\n"
     "\n"
     "GPU-hours over a period (default: the last day) per department and project,\n"
     "user or node: allocated, really used (kernel time as NVML measures it), idle\n"
     "while allocated, borrowed beyond the deserved quota and lent to others.\n"
     "Times: seconds since 1970, 2026-12-01, 2026-12-01T08:00:00Z, or a duration\n"
     "before now (7d). Used is '-' where nothing can measure it (emulated GPUs).\n"
     "--csv prints one line per key with the period, for chargeback; by queue, each\n"
     "line names its parent: a department's line includes its projects', so add up\n"
     "the lines without a parent (or the projects), never both. --price N adds the\n"
     "cost of the allocated GPU-hours at N per GPU-hour.\n"},
    {"export", "usage: gpupool export workloads [--from T] [--to T] > pods.csv\n"
               "       gpupool export nodes > nodes.csv\n"
               "       gpupool export projects > projects.csv\n"
               "\n"
               "The pool's own history in the files gpupool-sim reads, so that\n"
               "  gpupool-sim plan --nodes nodes.csv --pods pods.csv --projects projects.csv\n"
               "answers how many GPUs this organisation needs from what it really ran.\n"
               "Workloads: finished ones (submitted in [from, to)), with what they asked for,\n"
               "when they were submitted, first started and last ended. Admins only.\n"},
    {"queue",
     "usage: gpupool queue list [--json]\n"
     "       gpupool queue create NAME [--parent DEPT] [QUOTA FLAGS]\n"
     "       gpupool queue set NAME [QUOTA FLAGS]\n"
     "       gpupool queue delete NAME\n"
     "\n"
     "Departments are top-level queues; projects are queues under a department, and\n"
     "only projects take workloads. Quota flags (GPUs and CPUs as numbers, memory as\n"
     "sizes; a limit's none = unlimited, the default; deserved defaults to 0):\n"
     "  --deserved N  --limit N|none  --cpu-deserved N  --cpu-limit N|none\n"
     "  --memory-deserved SIZE  --memory-limit SIZE|none\n"
     "  --weight W    its share among its siblings of what the deserved quotas leave\n"
     "                (0.." WEIGHT_MAX ", default 1)\n"
     "  --priority N  among its siblings, higher first (-" QPRIORITY_MAX ".." QPRIORITY_MAX
     ", default 0)\n"
     "  --min-runtime-max DURATION  the longest min_runtime its workloads may claim\n"
     "                (default " RUNTIME_MAX_DEFAULT "m, at most " RUNTIME_MAX_MAX "d)\n"
     "  --reclaim-grace-max DURATION  the longest grace period its workloads keep when\n"
     "                evicted to reclaim GPUs for another queue (default " GRACE_MAX_DEFAULT
     "m, at most " GRACE_MAX_MAX "h)\n"
     "  --on-preempt pause|checkpoint|requeue|inherit  how the later submissions to\n"
     "                its projects that give no mode of their own are evicted;\n"
     "                a queue sets its own or takes its parent's (inherit, the\n"
     "                default; a top-level queue that sets none, checkpoint)\n"
     "  --idle-gpu-timeout DURATION|none  an interactive workload whose GPUs NVML saw\n"
     "                no use on for this long is paused where its node can pause, else\n"
     "                suspended, and its GPUs return to the pool; its owner's resume or\n"
     "                attach brings it back, paused ones where they were, suspended ones\n"
     "                from the beginning (" SESSION_BOUND_MIN "s to " SESSION_BOUND_MAX
     "d; default none)\n"
     "  --max-session-length DURATION|none  an interactive workload running this long\n"
     "                is paused or suspended the same way (" SESSION_BOUND_MIN
     "s to " SESSION_BOUND_MAX "d; default none)\n"
     "  --default-cpu N  cores each task of a submission that asks for none is given\n"
     "                (and counted on its node); default 0: none\n"
     "  --default-memory SIZE  host memory each task of a submission that asks for\n"
     "                none is given, e.g. 4G; default 0: none\n"
     "\n"
     "The list shows the tree with each queue's fair share (what it should hold now),\n"
     "what it holds and how many GPUs' worth it really keeps busy (USED).\n"
     "Admins manage departments; department admins their projects.\n"},
    {"node", "usage: gpupool node list [--json]\n\nEvery GPU: model, memory, share allocated, "
             "slices, memory really in use.\n"},
    {"token", "usage: gpupool token create --user U --role ROLE [--scope S] [--name N]\n"
              "                            [--unix-user NAME]\n"
              "       gpupool token list\n"
              "       gpupool token delete ID\n"
              "\n"
              "Roles: admin (everything); dept-admin (scope: one department: its projects,\n"
              "quotas and workloads); researcher (scope: projects, comma-separated: submits\n"
              "to them, sees their workloads, stops only its own). The secret is shown once.\n"
              "The token's workloads run as the Unix user --unix-user names (default: U);\n"
              "a daemon running as root refuses one that does not exist, and root itself\n"
              "unless it was started with --allow-root-workloads.\n"},
    {"whoami", "usage: gpupool whoami [--json]\n\nThe user, role, scope and Unix user of the token "
               "in use, and the "
               "server.\n"},
};

const char *cli_help_text(const char *cmd) {
    if (strcmp(cmd, "ls") == 0)
        cmd = "list";
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (strcmp(texts[i].cmd, cmd) == 0)
            return texts[i].text;
    return NULL;
}
