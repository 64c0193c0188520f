#include "support/ptrmap.h"

#include <stdint.h>

static unsigned ptr_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (unsigned)x;
}

void ptrmap_init(PtrMap *m, Arena *a) {
  m->arena = a;
  m->keys = NULL;
  m->vals = NULL;
  m->n = m->cap = 0;
}

static void ptrmap_grow(PtrMap *m) {
  int cap = m->cap ? m->cap * 2 : 16;
  const void **keys = ARENA_ARRAY(m->arena, const void *, cap);
  void **vals = ARENA_ARRAY(m->arena, void *, cap);
  for (int i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    unsigned h = ptr_hash(m->keys[i]) & (unsigned)(cap - 1);
    while (keys[h]) h = (h + 1) & (unsigned)(cap - 1);
    keys[h] = m->keys[i];
    vals[h] = m->vals[i];
  }
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
}

void ptrmap_put(PtrMap *m, const void *key, void *val) {
  if ((m->n + 1) * 2 > m->cap) ptrmap_grow(m);
  unsigned h = ptr_hash(key) & (unsigned)(m->cap - 1);
  while (m->keys[h] && m->keys[h] != key) h = (h + 1) & (unsigned)(m->cap - 1);
  if (!m->keys[h]) {
    m->keys[h] = key;
    m->n++;
  }
  m->vals[h] = val;
}

static int ptrmap_slot(const PtrMap *m, const void *key) {
  if (!m->cap) return -1;
  unsigned h = ptr_hash(key) & (unsigned)(m->cap - 1);
  while (m->keys[h]) {
    if (m->keys[h] == key) return (int)h;
    h = (h + 1) & (unsigned)(m->cap - 1);
  }
  return -1;
}

void *ptrmap_get(const PtrMap *m, const void *key) {
  int s = ptrmap_slot(m, key);
  return s < 0 ? NULL : m->vals[s];
}

bool ptrmap_has(const PtrMap *m, const void *key) { return ptrmap_slot(m, key) >= 0; }
