#include "support/arena.h"
#include "support/alloc.h"
#include "support/oom.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Chunk {
  struct Chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
  OomNode oom; /* first: released through it by a recovery point */
  Chunk *head;
  size_t bytes;
};

static void arena_release(OomNode *n) { arena_free((Arena *)n); }

enum { CHUNK_MIN = 64 * 1024 };

Arena *arena_new(void) {
  Arena *a = loom_calloc(1, sizeof(Arena));
  if (!a) oom_raise("an arena");
  oom_track(&a->oom, arena_release);
  return a;
}

void arena_free(Arena *a) {
  if (!a) return;
  oom_untrack(&a->oom);
  Chunk *c = a->head;
  while (c) {
    Chunk *n = c->next;
    loom_free(c);
    c = n;
  }
  loom_free(a);
}

void *arena_alloc(Arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (size == 0) size = 16;
  Chunk *c = a->head;
  if (!c || c->size - c->used < size) {
    size_t cap = size > CHUNK_MIN ? size : CHUNK_MIN;
    c = loom_malloc(sizeof(Chunk) + cap);
    if (!c) oom_raise("an arena chunk of %zu bytes", cap);
    c->size = cap;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  a->bytes += size;
  memset(p, 0, size);
  return p;
}

void *arena_memdup(Arena *a, const void *p, size_t size) {
  void *q = arena_alloc(a, size);
  if (size) memcpy(q, p, size);
  return q;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *q = arena_alloc(a, n + 1);
  memcpy(q, s, n);
  q[n] = 0;
  return q;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_vprintf(Arena *a, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  char *q = arena_alloc(a, (size_t)(n > 0 ? n : 0) + 1);
  vsnprintf(q, (size_t)n + 1, fmt, ap);
  return q;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *q = arena_vprintf(a, fmt, ap);
  va_end(ap);
  return q;
}

size_t arena_bytes_used(const Arena *a) { return a->bytes; }
