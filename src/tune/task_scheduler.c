/* Which task gets the next round (Ansor's gradient rule; tune.h). */
#include "tune/tune.h"

#include <math.h>

/* Ansor's constants: the backward window (rounds), the weight of the
 * observed slope against the optimistic forward guess, and how far below
 * the best throughput of its group a task is still expected to get. */
#define GRADIENT_ALPHA 0.2
#define GRADIENT_BETA 2.0

double tune_task_gradient(const TuneTaskState *tasks, int n, int i) {
  const TuneTaskState *k = &tasks[i];
  if (k->best_us <= 0) return -INFINITY; /* nothing known: the most to gain */
  /* d(model time)/d(task time): the model's estimated time is the sum of
   * calls x time over the tasks. */
  double chain = k->calls;
  /* The slope seen over the last TUNE_GRADIENT_WINDOW rounds. */
  double backward = k->best_us_back > 0 ? (k->best_us - k->best_us_back) / TUNE_GRADIENT_WINDOW : 0;
  /* The slope to expect: another round gains what an average round gained
   * so far (the optimistic guess), but no more than reaching half the best
   * throughput of a task of the same kind. */
  double next = k->best_us - k->best_us / (k->rounds > 0 ? k->rounds : 1);
  double best_flops = 0;
  int same = 0;
  for (int j = 0; j < n && k->group >= 0 && k->flops > 0; j++)
    if (tasks[j].group == k->group && tasks[j].best_us > 0) {
      same++;
      best_flops = fmax(best_flops, tasks[j].flops / tasks[j].best_us);
    }
  if (same > 1 && best_flops > 0) next = fmin(next, GRADIENT_BETA * k->flops / best_flops);
  double forward = next - k->best_us;
  return chain * (GRADIENT_ALPHA * backward + (1 - GRADIENT_ALPHA) * forward);
}

int tune_pick_task(const TuneTaskState *tasks, int n, double u, uint64_t r) {
  int open = 0;
  for (int i = 0; i < n; i++) open += !tasks[i].exhausted;
  if (open == 0) return -1;
  /* Warm-up, the fewest rounds first: every task's default, then every
   * task's first search batch, before any gradient is trusted. */
  int pick = -1;
  for (int i = 0; i < n; i++)
    if (!tasks[i].exhausted && tasks[i].rounds < TUNE_WARMUP_ROUNDS && (pick < 0 || tasks[i].rounds < tasks[pick].rounds))
      pick = i;
  if (pick >= 0) return pick;
  if (u < TUNE_TASK_EPSILON) { /* now and then a task at random, so no estimate starves one */
    int nth = (int)(r % (uint64_t)open);
    for (int i = 0; i < n && pick < 0; i++)
      if (!tasks[i].exhausted && nth-- == 0) pick = i;
    return pick;
  }
  double best = INFINITY, worst = -INFINITY;
  for (int i = 0; i < n; i++) {
    if (tasks[i].exhausted) continue;
    double g = tune_task_gradient(tasks, n, i);
    if (g < best) best = g, pick = i;
    worst = fmax(worst, g);
  }
  if (best == worst) { /* all equal (nothing gained anywhere yet): at random */
    int nth = (int)(r % (uint64_t)open);
    for (int i = 0; i < n; i++)
      if (!tasks[i].exhausted && nth-- == 0) return i;
  }
  return pick;
}
