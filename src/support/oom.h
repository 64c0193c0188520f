/* Running out of memory inside a public entry point: a recovery point.
 *
 * Arena allocations are unchecked at hundreds of call sites, so a failed
 * arena chunk cannot return an error through them. Instead each public entry
 * (the ONNX importer, loom_inspect_onnx, loom_compile_onnx, loom_model_load)
 * sets a recovery point; a failed allocation calls oom_raise, which
 * longjmps to the innermost point on this thread, and the entry frees every
 * arena created since and returns LOOM_ERR_OUT_OF_MEMORY naming what was
 * being allocated. Lua recovers from errors the same way.
 *
 * What is freed: arenas and string buffers (they track themselves while a
 * point is set). Other heap blocks that live across arena calls inside an
 * entry must be owned by an arena; direct malloc sites that can return an
 * error do so instead of raising.
 *
 * The stack of points is thread-local (errno-like: it sits below every
 * context). A failure on a thread with no point set (a thread-pool worker,
 * code outside an entry) prints what was being allocated and aborts, as
 * before. Usage, in the entry itself (setjmp's frame must stay live):
 *
 *   OomRecovery r;
 *   if (setjmp(*oom_recovery_push(&r))) return oom_recovery_unwind(&r, err);
 *   ... body (best in its own function) ...
 *   oom_recovery_pop(&r);
 */
#ifndef LOOM_SUPPORT_OOM_H
#define LOOM_SUPPORT_OOM_H

#include "support/arena.h"
#include "support/error.h"

#include <setjmp.h>

typedef struct OomRecovery {
  jmp_buf env;
  struct OomRecovery *prev;
  unsigned long first; /* serial of the first node tracked under this point */
} OomRecovery;

/* Sets r as the innermost point; returns its jmp_buf for the caller's setjmp. */
jmp_buf *oom_recovery_push(OomRecovery *r);
/* Normal exit: arenas and buffers created under r now belong to the caller
 * (or the next point out). r must be the innermost point. */
void oom_recovery_pop(OomRecovery *r);
/* After the longjmp: releases what was created under r, pops r, sets
 * LOOM_ERR_OUT_OF_MEMORY with the message and returns it. */
loom_status oom_recovery_unwind(OomRecovery *r, LoomError *err);
/* Out of memory: longjmps to the innermost point with "out of memory
 * allocating <what>", or prints that and aborts when there is none. */
_Noreturn void oom_raise(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What a recovery point frees: arenas, and the string buffers of
 * support/strbuf.h. Each embeds a node; while a point is set, a new one is
 * tracked (gets a serial) until it is released. Unwinding releases every
 * node with a serial from after the point was set. */
typedef struct OomNode {
  struct OomNode *prev, *next;
  unsigned long serial; /* 0: not tracked */
  void (*release)(struct OomNode *);
} OomNode;
/* Tracks n if a point is set on this thread (else leaves it untracked). */
void oom_track(OomNode *n, void (*release)(OomNode *));
/* Stops tracking n (no-op when untracked); call it before freeing n. */
void oom_untrack(OomNode *n);
/* n moved (realloc) from where `old` was tracked: tracks n in its place with
 * the same serial; `saved` is *old as it was before the move. */
void oom_retrack(OomNode *n, const OomNode *saved);

#endif
