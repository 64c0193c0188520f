/* Open-addressing map from pointer keys to pointer values (variable
 * substitutions, buffer remapping, visited sets). Lives in an arena. */
#ifndef LOOM_SUPPORT_PTRMAP_H
#define LOOM_SUPPORT_PTRMAP_H

#include "support/arena.h"

#include <stdbool.h>

typedef struct PtrMap {
  Arena *arena;
  const void **keys;
  void **vals;
  int n, cap;
} PtrMap;

void ptrmap_init(PtrMap *m, Arena *a);
void ptrmap_put(PtrMap *m, const void *key, void *val);
/* NULL if absent (so don't store NULL values you need to tell apart). */
void *ptrmap_get(const PtrMap *m, const void *key);
bool ptrmap_has(const PtrMap *m, const void *key);

#endif
