/* Default CPU schedules for the operators of src/topi (TVM's topi
 * schedules): each takes a schedule of the operator's PrimFunc and the name
 * of its main block, applies a schedule written with sampling points (so the
 * defaults here are only the starting point of tuning), and returns LOOM_OK
 * or the refusal of the primitive that failed (message in sch_error). */
#ifndef LOOM_TOPI_TOPI_SCHEDULE_H
#define LOOM_TOPI_TOPI_SCHEDULE_H

#include "target/target.h"
#include "tir/schedule/schedule.h"

/* C[.., i, j] = sum_k A[.., i, k] * B[.., k, j]: register-tiled outer
 * product with a packed B panel; parallel over column tiles when
 * num_threads > 1. */
loom_status topi_schedule_matmul_cpu(Schedule *s, const char *block, const Target *target,
                                     int num_threads);

#endif
