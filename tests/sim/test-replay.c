/*
 * test-replay.c — the virtual-time replay (src/sim/replay.c) on small
 * hand-made clusters whose results are computed by hand: queueing delay and
 * completion time, the time-weighted allocation, reclaim with a checkpoint
 * grace after which the evicted job resumes with its remaining work, whole
 * GPUs against fractional requests, the static split, gangs, the job table
 * built from a trace, and the plan's node scaling and search.
 */
#include <stdio.h>
#include <string.h>

#include "gptest.h"
#include "sim/plan.h"
#include "sim/replay.h"

typedef struct world {
    sim_node *nodes;
    size_t nn;
    sim_pod *pods;
    size_t np;
    sim_project *pr;
    size_t npr;
    int32_t leaf[64];
    sim_job *jobs;
    size_t nj;
} world;

static void load(world *w, const char *nodes, const char *pods, const char *projects) {
    char err[256];
    memset(w, 0, sizeof *w);
    ck_assert_int_eq(
        sim_read_nodes_mem("n.csv", nodes, strlen(nodes), &w->nodes, &w->nn, err, sizeof err), 0);
    ck_assert_int_eq(
        sim_read_pods_mem("p.csv", pods, strlen(pods), &w->pods, &w->np, err, sizeof err), 0);
    ck_assert_int_eq(sim_read_projects_mem("q.csv", projects, strlen(projects), &w->pr, &w->npr,
                                           err, sizeof err),
                     0);
    ck_assert_int_eq(
        sim_assign_projects(w->pr, w->npr, w->pods, w->np, "p.csv", w->leaf, err, sizeof err), 0);
    ck_assert_int_eq(
        sim_replay_jobs(w->pods, w->np, w->leaf, "p.csv", &w->jobs, &w->nj, err, sizeof err), 0);
}

static void run(const world *w, sim_mode mode, int64_t grace, sim_replay_result *r) {
    sim_replay_opts o;
    sim_replay_opts_init(&o);
    o.mode = mode;
    o.grace_s = grace;
    char err[256];
    ck_assert_int_eq(sim_replay_run(w->nodes, w->nn, w->pods, w->jobs, w->nj, w->pr, w->npr, &o, r,
                                    err, sizeof err),
                     0);
}

static void unload(world *w) {
    free(w->nodes);
    free(w->pods);
    free(w->pr);
    free(w->jobs);
}

#define ONE_GPU_NODE "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,1,A\n"
#define POD_HDR                                                                                    \
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,project,kind\n"
#define ONE_PROJECT "name,deserved_gpus\na,1\n"

START_TEST(test_queue_on_one_gpu) {
    world w;
    /* Two whole-GPU jobs at t=0 of 100 s on one GPU: the second waits 100 s
     * and completes at 200 s; the GPU is busy all of [0, 200]. */
    load(&w, ONE_GPU_NODE,
         POD_HDR "j0,1000,1,1,1000,0,100,a,train\nj1,1000,1,1,1000,0,100,a,train\n", ONE_PROJECT);
    sim_replay_result r;
    run(&w, SIM_MODE_POOLED, 30, &r);
    ck_assert_int_eq(r.started, 2);
    ck_assert_int_eq(r.finished, 2);
    ck_assert_int_eq(r.t1, 200);
    ck_assert_double_eq_tol(r.delay_p50, 50, 1e-9);
    ck_assert_double_eq_tol(r.delay_p95, 95, 1e-9);
    ck_assert_double_eq_tol(r.delay_mean, 50, 1e-9);
    ck_assert_double_eq_tol(r.jct_mean, 150, 1e-9);
    ck_assert_double_eq_tol(r.alloc_pct, 100, 1e-9);
    ck_assert_int_eq(r.nprojects, 1);
    ck_assert_double_eq_tol(r.projects[0].share, 1.0, 1e-9);
    sim_replay_result_free(&r);
    unload(&w);
}
END_TEST

START_TEST(test_allocation_time_weighted) {
    world w;
    /* Two GPUs; one job holds one of them for [0, 50] then nothing until the
     * second job holds one for [100, 200]: (50 + 100) GPU-s over 200 s of a
     * two-GPU pool = 37.5%. */
    load(&w, "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,A\n",
         POD_HDR "j0,1000,1,1,1000,0,50,a,train\nj1,1000,1,1,1000,100,200,a,train\n", ONE_PROJECT);
    sim_replay_result r;
    run(&w, SIM_MODE_POOLED, 30, &r);
    ck_assert_double_eq_tol(r.alloc_pct, 37.5, 1e-9);
    ck_assert_int_eq(r.nseries, 4);
    ck_assert_int_eq(r.series[1].t, 50);
    ck_assert_int_eq(r.series[1].milli, 0);
    sim_replay_result_free(&r);
    unload(&w);
}
END_TEST

START_TEST(test_reclaim_resumes_remaining_work) {
    world w;
    /* One GPU; project a (deserved 0) borrows it from t=0 for 100 s; project
     * b (deserved 1) submits a non-preemptible job at t=10 for 20 s. a's job
     * is evicted at 10 (10 s of work kept), released at 10 + grace 5 = 15;
     * b runs [15, 35]; a resumes at 35 with 90 s left and ends at 125. */
    load(&w, ONE_GPU_NODE,
         POD_HDR "a0,1000,1,1,1000,0,100,a,train\nb0,1000,1,1,1000,10,30,b,interactive\n",
         "name,deserved_gpus\na,0\nb,1\n");
    sim_replay_result r;
    run(&w, SIM_MODE_POOLED, 5, &r);
    ck_assert_int_eq(r.evictions, 1);
    ck_assert_int_eq(r.evict_by[GP_EVICT_RECLAIM], 1);
    ck_assert_int_eq(r.finished, 2);
    ck_assert_int_eq(r.t1, 125);
    /* Delays: a 0, b 5; completion times: a 125, b 25. */
    ck_assert_double_eq_tol(r.delay_mean, 2.5, 1e-9);
    ck_assert_double_eq_tol(r.jct_mean, 75, 1e-9);
    sim_replay_result_free(&r);
    /* Static: b owns the GPU and a owns nothing: a's job could never run, so
     * the engine refuses it at submit. */
    run(&w, SIM_MODE_STATIC, 5, &r);
    ck_assert_int_eq(r.evictions, 0);
    ck_assert_int_eq(r.rejected, 1);
    ck_assert_ptr_nonnull(strstr(r.first_reject, "cannot run on this pool"));
    sim_replay_result_free(&r);
    unload(&w);
}
END_TEST

START_TEST(test_fractions_whole_or_shared) {
    world w;
    /* Two half-GPU jobs on one GPU: shared they run together; as whole GPUs
     * the second waits for the first. */
    load(&w, ONE_GPU_NODE, POD_HDR "h0,1000,1,1,500,0,100,a,train\nh1,1000,1,1,500,0,100,a,train\n",
         ONE_PROJECT);
    sim_replay_result r;
    run(&w, SIM_MODE_FRACTIONAL, 30, &r);
    ck_assert_double_eq_tol(r.delay_p99, 0, 1e-9);
    ck_assert_double_eq_tol(r.alloc_pct, 100, 1e-9);
    sim_replay_result_free(&r);
    run(&w, SIM_MODE_POOLED, 30, &r);
    ck_assert_int_eq(r.t1, 200);
    ck_assert_double_eq_tol(r.delay_mean, 50, 1e-9);
    sim_replay_result_free(&r);
    unload(&w);
}
END_TEST

START_TEST(test_gang_starts_together) {
    world w;
    /* A gang of 2 one-GPU tasks on two one-GPU nodes waits until both GPUs
     * are free (t=40), then holds both. */
    load(&w, "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,1,A\nn1,32000,65536,1,A\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,project,kind,"
         "tasks\nx,1000,1,1,1000,0,40,a,train,1\ng,1000,1,1,1000,1,11,a,train,2\n",
         "name,deserved_gpus\na,2\n");
    sim_replay_result r;
    run(&w, SIM_MODE_POOLED, 30, &r);
    ck_assert_int_eq(r.finished, 2);
    ck_assert_int_eq(r.t1, 50);
    ck_assert_double_eq_tol(r.delays[1], 39, 1e-9);
    sim_replay_result_free(&r);
    unload(&w);
}
END_TEST

START_TEST(test_jobs_from_trace) {
    const char *t = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,"
                    "scheduled_time\nb,1,1,0,0,20,50,30\na,1,1,0,0,10,40,\nc,1,1,0,0,10,40,99\n";
    sim_pod *p;
    size_t n, nj;
    char err[256];
    ck_assert_int_eq(sim_read_pods_mem("p.csv", t, strlen(t), &p, &n, err, sizeof err), 0);
    int32_t leaf[3] = {0, 0, 0};
    sim_job *j;
    ck_assert_int_eq(sim_replay_jobs(p, n, leaf, "p.csv", &j, &nj, err, sizeof err), 0);
    ck_assert_int_eq(nj, 3);
    /* Sorted by submission, then file order; a scheduled_time inside the
     * pod's life starts the clock of its duration, one outside is ignored. */
    ck_assert_int_eq(j[0].pod, 1);
    ck_assert_int_eq(j[0].duration, 30);
    ck_assert_int_eq(j[1].pod, 2);
    ck_assert_int_eq(j[1].duration, 30);
    ck_assert_int_eq(j[2].duration, 20);
    free(j);
    free(p);
    t = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\na,1,1,0,0,10\n";
    ck_assert_int_eq(sim_read_pods_mem("p.csv", t, strlen(t), &p, &n, err, sizeof err), 0);
    ck_assert_int_lt(sim_replay_jobs(p, n, leaf, "p.csv", &j, &nj, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "p.csv:2: field deletion_time: empty"));
    free(p);
}
END_TEST

START_TEST(test_scale_nodes) {
    sim_node n[4], out[9];
    memset(n, 0, sizeof n);
    for (int i = 0; i < 4; i++) {
        snprintf(n[i].name, sizeof n[i].name, "n%d", i);
        n[i].ngpus = i + 1;
    }
    sim_scale_nodes(n, 4, 2, out);
    ck_assert_str_eq(out[0].name, "n1");
    ck_assert_str_eq(out[1].name, "n3");
    sim_scale_nodes(n, 4, 9, out);
    ck_assert_str_eq(out[4].name, "n0~1");
    ck_assert_str_eq(out[8].name, "n3~2");
    ck_assert_int_eq(sim_nodes_gpus(out, 9), 2 * 10 + 4);
}
END_TEST

START_TEST(test_plan_orders_modes) {
    sim_inputs in;
    memset(&in, 0, sizeof in);
    in.nodes_path = "tests/sim/fixtures/replay-nodes.csv";
    in.pods_path = "tests/sim/fixtures/replay-pods.csv";
    in.projects_path = "tests/sim/fixtures/replay-projects.csv";
    char err[256];
    ck_assert_int_eq(sim_inputs_load(&in, err, sizeof err), 0);
    sim_replay_opts o;
    sim_replay_opts_init(&o);
    sim_plan p;
    ck_assert_int_eq(sim_plan_run(&in, &o, 60, &p, err, sizeof err), 0);
    for (int m = 0; m < SIM_MODE_COUNT; m++) {
        ck_assert(p.modes[m].found);
        ck_assert_double_le(p.modes[m].needed.delay_p95, 60);
    }
    /* Sharing never needs more GPUs than owning: static >= pooled >=
     * pooled-fractional on this fixture (a burst of one project). */
    ck_assert_int_gt(p.modes[SIM_MODE_STATIC].gpus_needed, p.modes[SIM_MODE_POOLED].gpus_needed);
    ck_assert_int_ge(p.modes[SIM_MODE_POOLED].gpus_needed,
                     p.modes[SIM_MODE_FRACTIONAL].gpus_needed);
    FILE *f = tmpfile();
    ck_assert_int_eq(sim_plan_html(&p, &in, f), 0);
    long len = ftell(f);
    rewind(f);
    char *html = calloc(1, (size_t)len + 1);
    ck_assert_int_eq(fread(html, 1, (size_t)len, f), len);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(html, "<svg"));
    ck_assert_ptr_null(strstr(html, "http"));
    ck_assert_ptr_null(strstr(html, "<script"));
    ck_assert_ptr_null(strstr(html, "src="));
    free(html);
    sim_plan_free(&p);
    sim_inputs_free(&in);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_queue_on_one_gpu);
    tcase_add_test(tc, test_allocation_time_weighted);
    tcase_add_test(tc, test_reclaim_resumes_remaining_work);
    tcase_add_test(tc, test_fractions_whole_or_shared);
    tcase_add_test(tc, test_gang_starts_together);
    tcase_add_test(tc, test_jobs_from_trace);
    tcase_add_test(tc, test_scale_nodes);
    tcase_add_test(tc, test_plan_orders_modes);
}

GP_TEST_MAIN("sim/replay", add_tests)
