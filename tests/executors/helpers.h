/*
 * helpers.h — what the executor tests share: scratch directories, opening
 * the local executor on one, launching /bin/sh scripts as tasks, and waiting
 * for a task's state or a file with generous time limits (the tests must
 * hold on a loaded two-core machine, so nothing depends on tight timing).
 */
#ifndef GP_TESTS_EXECUTORS_HELPERS_H
#define GP_TESTS_EXECUTORS_HELPERS_H

#include <stddef.h>
#include <sys/types.h>

#include "executors/executor.h"

/* The longest any test waits for something that should happen at once (at
 * load 90 on two cores, a holder took more than 10 s to start). */
#define GPT_WAIT_MS 30000

/* A fresh directory under $TMPDIR (or /tmp); the path is static storage. */
const char *gpt_tmpdir(void);

/* Removes a directory tree (what rm -rf does); errors are ignored. */
void gpt_rmrf(const char *path);

/* Opens the local executor with state_dir=<dir>/state, nvml=off,
 * cgroup=off, a non-existent interposer, then ",extra" if extra is set.
 * Fails the test if it cannot be opened. */
gp_executor *gpt_open(const char *dir, const char *extra);

/* Closes ex and removes dir: the end of most tests. */
void gpt_done(gp_executor *ex, const char *dir);

/* Fills t for workload w, task 0, attempt 1, running argv, with its log,
 * checkpoint and working directories under dir. */
void gpt_launch_init(gp_task_launch *t, uint64_t w, const char *const *argv, const char *dir);

/* Launches "/bin/sh -c script" as workload w; fails the test on error. The
 * script runs in dir (its working directory). */
void gpt_launch_sh(gp_executor *ex, uint64_t w, const char *script, const char *dir,
                   char handle[GP_HANDLE_MAX]);

/* Polls handle until its state is want or GPT_WAIT_MS have passed; returns
 * the last status seen. */
gp_task_status gpt_wait(gp_executor *ex, const char *handle, gp_task_state want);

/* gpt_wait for GP_TASK_EXITED that fails the test if the task is not. */
gp_task_status gpt_exited(gp_executor *ex, const char *handle);

/* Waits until path exists (up to GPT_WAIT_MS); 1 if it does. */
int gpt_wait_file(const char *path);

/* The contents of a file (malloc'd, NUL-terminated), or NULL. */
char *gpt_slurp(const char *path);

/* Writes text to path (created or truncated); fails the test on error. */
void gpt_spit(const char *path, const char *text);

/* The pid written in a file by a task script ("echo $! > file"). */
pid_t gpt_read_pid(const char *path);

/* Waits until pid is gone (no such process, or a zombie); 1 if it is. */
int gpt_wait_gone(pid_t pid);

/* The path of the fake libnvidia-ml.so.1 of this build (tests/fake), which
 * the executor dlopens with nvml=PATH; fails the test if it is missing. */
void gpt_fake_nvml(char *out, size_t len);

/* The errno of opening path (read-only) from a child that first joins the
 * cgroup directory cg (cgroup.procs): 0 if it opened, EPERM where the
 * cgroup's device rules refuse it. */
int gpt_open_in(const char *cg, const char *path);

/* "<dir>/<name>" in a static rotating buffer (good for a few at a time). */
const char *gpt_path(const char *dir, const char *name);

#endif /* GP_TESTS_EXECUTORS_HELPERS_H */
