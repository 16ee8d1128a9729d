/*
 * gpuuse.h — the record of how busy an interactive task's GPUs are, which
 * gpupool-slurm-session writes inside the task's job on its node and the
 * slurm executor reads on the shared state directory (gpuuse.c):
 *
 *     gpupool-gpu-use at=<unix seconds> n=<N> busy=<b1>,...,<bN> mem=<m1>,...,<mN>
 *
 * padded with spaces to GPX__GPU_USE_RECORD bytes, the last a newline, and
 * rewritten in place (one pwrite of the whole record, so that a reader sees
 * one record or the next), for the job's GPUs in the order of its
 * CUDA_VISIBLE_DEVICES: busy in per mille of the time a kernel ran over the
 * last few seconds, mem the bytes in use on the GPU, -1 for unknown.
 *
 * The file is written by the task's user (through a descriptor the job
 * script opened), so the executor reads it as outside input: bounded,
 * strict, every field checked (fuzz/gpu-use.c).
 */
#ifndef GP_EXECUTORS_SLURM_GPUUSE_H
#define GP_EXECUTORS_SLURM_GPUUSE_H

#include <stddef.h>
#include <stdint.h>

#define GPX__GPU_USE_RECORD 512
#define GPX__GPU_USE_MAX    16 /* GPUs one record describes at most */

typedef struct gpx__gpu_use {
    int64_t at; /* unix seconds */
    int n;
    int32_t busy[GPX__GPU_USE_MAX]; /* per mille, -1 unknown */
    int64_t mem[GPX__GPU_USE_MAX];  /* bytes, -1 unknown */
} gpx__gpu_use;

/* Writes u as one record of GPX__GPU_USE_RECORD bytes into buf (room for
 * that many). GP_EINVAL if u does not fit (n out of range). */
int gpx__gpu_use_format(const gpx__gpu_use *u, char *buf);

/* Parses the len bytes of text (a record as gpx__gpu_use_format writes
 * it; the padding and the newline are optional) into u. 0, or GP_EINVAL if
 * anything is out of form or range. */
int gpx__gpu_use_parse(const char *text, size_t len, gpx__gpu_use *u);

#endif /* GP_EXECUTORS_SLURM_GPUUSE_H */
