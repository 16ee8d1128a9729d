/*
 * nvml.h — NVML as the executors load it (nvml.c): at run time with
 * dlopen, through the one description of its interface in
 * common/gp_nvml.h, so that nothing needs NVIDIA's headers or links the
 * library. The local executor reads its inventory and GPU use from it on
 * the host; gpupool-slurm-session samples the GPUs of its job with it on a
 * Slurm node. Internal to the executors and their programs.
 */
#ifndef GP_EXECUTORS_NVML_H
#define GP_EXECUTORS_NVML_H

#include <stddef.h>
#include <stdint.h>

#include "common/gp_nvml.h"

/* NVML as this instance loaded it: one typed pointer per entry point of
 * common/gp_nvml.h, NULL where the library lacks it. */
typedef struct gpx__nvml {
    void *lib; /* NULL: NVML is not in use */
#define GPX__NVML_FIELD(sym, params, args) gp_nvml_pfn_##sym sym;
    GP_NVML_ENTRIES(GPX__NVML_FIELD)
#undef GPX__NVML_FIELD
    char note[256]; /* where it was loaded from, or why not */
} gpx__nvml;

/*
 * Loads NVML from lib (a file name for dlopen) and initialises it. With
 * required 0, a missing library or a failed nvmlInit is not an error: NVML is
 * simply not used and nv->note says why (returns 0). With required 1 those
 * fail with GP_ENOENT / GP_EIO and err says why.
 */
int gpx__nvml_open(gpx__nvml *nv, const char *lib, int required, char *err, size_t errlen);
void gpx__nvml_close(gpx__nvml *nv);

/*
 * How busy the GPU of NVML index i was lately (per mille of the time a
 * kernel ran; -1 where NVML cannot tell, as on MIG GPUs and old drivers)
 * and the bytes in use on it (-1 unknown). 0, or -1 if NVML has no such
 * GPU (both figures then -1).
 */
int gpx__nvml_sample(gpx__nvml *nv, unsigned int i, int32_t *busy_permille, int64_t *mem_used);

#endif /* GP_EXECUTORS_NVML_H */
