/* Growable arrays in an arena: VEC(T) declares {T *items; int n, cap;}.
 * Growing copies into a fresh arena block (the old one is reclaimed with the
 * arena), which is fine for the short lists IR builders collect. */
#ifndef LOOM_SUPPORT_VEC_H
#define LOOM_SUPPORT_VEC_H

#include "support/arena.h"

#include <string.h>

#define VEC(T) \
  struct {     \
    T *items;  \
    int n, cap; \
  }

#define VEC_PUSH(arena, v, x)                                                            \
  do {                                                                                   \
    if ((v).n == (v).cap) {                                                              \
      int cap_ = (v).cap ? (v).cap * 2 : 8;                                              \
      void *p_ = arena_alloc((arena), sizeof(*(v).items) * (size_t)cap_);                \
      if ((v).n) memcpy(p_, (v).items, sizeof(*(v).items) * (size_t)(v).n);              \
      (v).items = p_;                                                                    \
      (v).cap = cap_;                                                                    \
    }                                                                                    \
    (v).items[(v).n++] = (x);                                                            \
  } while (0)

#endif
