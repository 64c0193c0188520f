/* Small pieces shared by the default schedules. */
#include "topi/topi_schedule.h"

#include <string.h>

#include <stdio.h>
#include <stdlib.h>

void topi_fold_epilogue(Schedule *s, const char *epilogue) {
  if (!epilogue) return;
  SchRV e = sch_get_block(s, epilogue);
  if (e >= 0 && sch_reverse_compute_inline(s, e) != LOOM_OK) topi_schedule_note(s, "fold epilogue");
}

void topi_schedule_note(const Schedule *s, const char *step) {
  const char *debug = getenv("LOOM_DEBUG_SCHEDULE");
  if (debug && *debug && strcmp(debug, "0") != 0)
    fprintf(stderr, "loom: schedule of %s: %s refused: %s\n", sch_func(s)->name, step, sch_error(s));
}
