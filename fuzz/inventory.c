/*
 * inventory.c — fuzz target for the local executor's inventory file (the
 * node and its GPUs, written by an administrator): the input is the file,
 * handed to the parser through an in-memory file (memfd) since the parser
 * reads a path.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "executors/local/local.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int fd = -1;
    if (fd < 0 && (fd = memfd_create("inventory", 0)) < 0)
        return 0;
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    gp_node_spec n;
    memset(&n, 0, sizeof n);
    snprintf(n.name, sizeof n.name, "host");
    n.cpu_milli = 4000;
    n.mem_bytes = 1 << 30;
    char err[512];
    if (gpx__inv_parse_file(path, &n, NULL, err, sizeof err) == 0 &&
        (n.ngpus < 0 || n.ngpus > GP_MAX_GPUS_PER_NODE || n.nlabels > GP_MAX_LABELS))
        __builtin_trap();
    return 0;
}
