/* For the default-schedule tests: a compute definition and its scheduled
 * form built into one module and run on the same random inputs. */
#ifndef LOOM_TEST_SCHEDULE_RUN_H
#define LOOM_TEST_SCHEDULE_RUN_H

#include "driver/driver.h"
#include "runtime/threadpool.h"

typedef struct ScheduleRun {
  DriverModule *module; /* function 0: "reference", 1: "scheduled" */
  DriverTensors ref, sched;
  const float *want, *got; /* the last (output) tensor of each */
  size_t count;
} ScheduleRun;

static inline PrimFunc *schedule_run_renamed(Arena *a, const PrimFunc *f, const char *name) {
  PrimFunc *g = arena_memdup(a, f, sizeof *f);
  g->name = arena_strdup(a, name);
  return g;
}

/* Builds both (functions allocated in a); inputs from data_seed; the
 * scheduled one runs on a pool of `threads`. */
static inline void schedule_run(Arena *a, const PrimFunc *reference, const PrimFunc *scheduled, int threads,
                                uint64_t data_seed, ScheduleRun *r) {
  LoomError err = {0};
  const PrimFunc *funcs[2] = {schedule_run_renamed(a, reference, "reference"),
                              schedule_run_renamed(a, scheduled, "scheduled")};
  if (driver_build(a, funcs, 2, NULL, &r->module, &err)) fail_msg("build: %s", err.msg);
  Kernel kr, ks;
  assert_int_equal(driver_get_kernel(r->module, "reference", &kr, &err), LOOM_OK);
  assert_int_equal(driver_get_kernel(r->module, "scheduled", &ks, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(driver_lowered(r->module, 0), data_seed, &r->ref, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(driver_lowered(r->module, 1), data_seed, &r->sched, &err), LOOM_OK);
  ThreadPool *pool = NULL;
  assert_int_equal(threadpool_create(threads, &pool, &err), LOOM_OK);
  if (kernel_call(&kr, r->ref.ptrs, r->ref.n, NULL, NULL, &err)) fail_msg("reference: %s", err.msg);
  if (kernel_call(&ks, r->sched.ptrs, r->sched.n, pool, NULL, &err)) fail_msg("scheduled: %s", err.msg);
  threadpool_destroy(pool);
  int out = r->ref.n - 1;
  r->want = r->ref.tensors[out].data;
  r->got = r->sched.tensors[out].data;
  r->count = r->ref.bytes[out] / sizeof(float);
}

static inline void schedule_run_free(ScheduleRun *r) {
  driver_tensors_free(&r->ref);
  driver_tensors_free(&r->sched);
  driver_module_free(r->module);
}

#endif
