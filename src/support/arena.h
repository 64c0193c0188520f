/* Bump allocator: IR lives in an arena owned by one compilation (or one
 * schedule candidate) and is freed at once; there is no per-node free. */
#ifndef LOOM_SUPPORT_ARENA_H
#define LOOM_SUPPORT_ARENA_H

#include <stdarg.h>
#include <stddef.h>

typedef struct Arena Arena;

Arena *arena_new(void);
void arena_free(Arena *a);
/* Zeroed, 16-byte aligned memory. Running out of memory longjmps to the
 * innermost recovery point (support/oom.h: the public entry returns
 * LOOM_ERR_OUT_OF_MEMORY and frees the arenas created since), or prints a
 * message and aborts where none is set. */
void *arena_alloc(Arena *a, size_t size);
#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))
void *arena_memdup(Arena *a, const void *p, size_t size);
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);
/* Total bytes handed out: tests use it to check a pass does not blow up. */
size_t arena_bytes_used(const Arena *a);

#endif
