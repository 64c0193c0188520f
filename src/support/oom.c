#include "support/oom.h"

#include <stdio.h>
#include <stdlib.h>

/* Per thread: the innermost point, the tracked nodes (in no order), the
 * next serial, and the last failure's text. */
static _Thread_local OomRecovery *innermost;
static _Thread_local OomNode *tracked;
static _Thread_local unsigned long next_serial = 1;
static _Thread_local char what[256];

jmp_buf *oom_recovery_push(OomRecovery *r) {
  r->prev = innermost;
  r->first = next_serial;
  innermost = r;
  return &r->env;
}

static void link_node(OomNode *n, unsigned long serial) {
  n->serial = serial;
  n->prev = NULL;
  n->next = tracked;
  if (tracked) tracked->prev = n;
  tracked = n;
}

void oom_untrack(OomNode *n) {
  if (!n->serial) return;
  if (n->prev) n->prev->next = n->next;
  else tracked = n->next;
  if (n->next) n->next->prev = n->prev;
  n->prev = n->next = NULL;
  n->serial = 0;
}

void oom_track(OomNode *n, void (*release)(OomNode *)) {
  n->release = release;
  n->prev = n->next = NULL;
  n->serial = 0;
  if (innermost) link_node(n, next_serial++);
}

void oom_retrack(OomNode *n, const OomNode *saved) {
  if (!saved->serial) {
    n->prev = n->next = NULL;
    n->serial = 0;
    return;
  }
  /* The neighbours still point at the old address: splice n in. */
  n->prev = saved->prev;
  n->next = saved->next;
  if (n->prev) n->prev->next = n;
  else tracked = n;
  if (n->next) n->next->prev = n;
}

void oom_recovery_pop(OomRecovery *r) {
  LOOM_ASSERT(innermost == r);
  innermost = r->prev;
  /* Leaving the outermost point: what is left is the caller's, unwatched. */
  if (!innermost)
    while (tracked) oom_untrack(tracked);
}

loom_status oom_recovery_unwind(OomRecovery *r, LoomError *err) {
  LOOM_ASSERT(innermost == r);
  /* Everything tracked since r was set is owned by frames the longjmp
   * skipped. Releasing a node unlinks it, so rescan from the head. */
  OomNode *n = tracked;
  while (n) {
    if (n->serial >= r->first) {
      n->release(n);
      n = tracked;
    } else {
      n = n->next;
    }
  }
  oom_recovery_pop(r);
  return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory allocating %s", what);
}

_Noreturn void oom_raise(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (innermost) longjmp(innermost->env, 1);
  fprintf(stderr, "loom: out of memory allocating %s\n", what);
  abort();
}
