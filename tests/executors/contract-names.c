/*
 * contract-names.c — prints, one a line, the name of every variable the
 * environment builder (src/executors/contract.c) can give a task: it builds
 * the environments that between them set everything (a gang member in an
 * emulated fractional slice with a compute share and the interposer; a MIG
 * slice) and prints the names they hold. test-contract-doc.sh compares the
 * list with the table of docs/workload-contract.md.
 *
 * With the argument "ports": the first and the last of a gang's rendezvous
 * ports (MASTER_PORT) and how many there are, which the table states.
 */
#include <stdio.h>
#include <string.h>

#include "common/gp_error.h"
#include "executors/contract.h"

static int print_names(const gpx__contract_in *in) {
    gpx__contract c;
    char err[GP_ERR_MAX] = "";
    if (gpx__contract_build(in, &c, err, sizeof err) < 0) {
        fprintf(stderr, "contract-names: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < c.n; i++)
        printf("%.*s\n", (int)c.v[i].name_len, c.v[i].kv);
    gpx__contract_free(&c);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "ports") == 0) {
        printf("%d %d %d\n", GP_MASTER_PORT_BASE, GP_MASTER_PORT_BASE + GP_MASTER_PORTS - 1,
               GP_MASTER_PORTS);
        return 0;
    }
    static gp_node_spec node;
    snprintf(node.name, sizeof node.name, "n1");
    node.ngpus = 2;
    snprintf(node.gpus[0].uuid, sizeof node.gpus[0].uuid, "GPU-0");
    snprintf(node.gpus[1].uuid, sizeof node.gpus[1].uuid, "GPU-1");
    node.gpus[1].nmig = 1;
    snprintf(node.gpus[1].mig_layout[0], sizeof node.gpus[1].mig_layout[0], "1g.10gb");
    gp_task_binding frac = {"n1", 1, {{0, 250, 1 << 30, -1}}};
    gp_task_binding mig = {"n1", 1, {{1, 1000, 1 << 30, 0}}};
    const char *cmd[] = {"true", NULL};
    gp_task_launch t = {.workload = 1,
                        .attempt = 1,
                        .argv = cmd,
                        .compute_share = 25,
                        .node = &node,
                        .binding = &frac,
                        .gang_size = 2,
                        .gang_first = &node};
    gpx__contract_in in = {.t = &t,
                           .instance = "i",
                           .ckpt_dir = "/c",
                           .interposer = "/libgpuslice.so",
                           .interposer_found = 1,
                           .emulated = 1,
                           .master_addr = "n1"};
    if (print_names(&in) != 0)
        return 1;
    t.binding = &mig;
    return print_names(&in);
}
