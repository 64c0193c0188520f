/* The one allocation hook: every malloc-family call in Loom's library code
 * (compiler and runtime) goes through these, so a test can count bytes and
 * make the n-th allocation fail (STYLE rule 4; Lua's test build does the
 * same). Not for generated kernel C, which never allocates.
 *
 * The functions behave as their libc namesakes: NULL on failure, and
 * loom_free(NULL) is a no-op. Memory from them may be released with free()
 * and memory from libc with loom_free(): the hook keeps no header. */
#ifndef LOOM_SUPPORT_ALLOC_H
#define LOOM_SUPPORT_ALLOC_H

#include <stddef.h>

void *loom_malloc(size_t size);
void *loom_calloc(size_t count, size_t size);
void *loom_realloc(void *p, size_t size);
void loom_free(void *p);
char *loom_strdup(const char *s);
/* C11 aligned_alloc: size must be a multiple of align. */
void *loom_aligned_alloc(size_t align, size_t size);

/* Test control. Always compiled (one library for tests and users) but inert
 * until armed: an unarmed allocation costs one relaxed atomic load and a
 * predictable branch, measured as noise next to malloc itself.
 *
 * loom_alloc_test_arm(fail_at) zeroes the counters and starts counting;
 * with fail_at > 0 the fail_at-th allocation from now (1-based) returns NULL,
 * once, as libc does when memory runs out; fail_at == 0 only counts.
 * loom_alloc_test_disarm() stops counting and failing. The counters are
 * process-wide (tests only; library code never reads them). */
void loom_alloc_test_arm(size_t fail_at);
void loom_alloc_test_disarm(void);
/* Allocations attempted since arming and the bytes they asked for (a failed
 * one counts in both). Either pointer may be NULL. */
void loom_alloc_test_stats(size_t *bytes, size_t *count);
/* Whether the armed failure has happened yet. */
int loom_alloc_test_failed(void);

#endif
