/* Small pieces shared by the default schedules. */
#include "topi/topi_schedule.h"

void topi_fold_epilogue(Schedule *s, const char *epilogue) {
  if (!epilogue) return;
  SchRV e = sch_get_block(s, epilogue);
  if (e >= 0) sch_reverse_compute_inline(s, e);
}
