/* TODO(merge): tir_pass_find. Helper D adds the lowering passes' table to
 * src/tir/transform/transform.h + lower.c (TirPassFn, TirPass,
 * tir_pass_find, tir_pass_list); until that lands this header stands in
 * for it with the same names and signatures. At the merge, delete this file
 * and its one #include in tir_file_runner.c. */
#ifndef LOOM_TESTS_TIR_PASS_STANDIN_H
#define LOOM_TESTS_TIR_PASS_STANDIN_H

#include <string.h>

#include "tir/transform/transform.h"

typedef const PrimFunc *(*TirPassFn)(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err);
typedef struct TirPass {
  const char *name;
  TirPassFn run;
} TirPass;

static const PrimFunc *standin_simplify(Arena *a, const PrimFunc *f, const LowerOptions *o, LoomError *e) {
  (void)o, (void)e;
  return tir_simplify(a, f);
}
static const PrimFunc *standin_lower_blocks(Arena *a, const PrimFunc *f, const LowerOptions *o, LoomError *e) {
  (void)o;
  return tir_lower_blocks(a, f, e);
}
static const PrimFunc *standin_loop_partition(Arena *a, const PrimFunc *f, const LowerOptions *o, LoomError *e) {
  (void)o, (void)e;
  return tir_loop_partition(a, f);
}
static const PrimFunc *standin_compact_buffers(Arena *a, const PrimFunc *f, const LowerOptions *o, LoomError *e) {
  (void)o, (void)e;
  return tir_compact_buffers(a, f);
}
static const PrimFunc *standin_flatten_buffers(Arena *a, const PrimFunc *f, const LowerOptions *o, LoomError *e) {
  (void)o;
  return tir_flatten_buffers(a, f, e);
}
static const PrimFunc *standin_legalize_narrow(Arena *a, const PrimFunc *f, const LowerOptions *o, LoomError *e) {
  (void)o, (void)e;
  return tir_legalize_narrow(a, f);
}
static const PrimFunc *standin_vectorize(Arena *a, const PrimFunc *f, const LowerOptions *o, LoomError *e) {
  (void)o, (void)e;
  return tir_vectorize(a, f);
}
static const PrimFunc *standin_unroll(Arena *a, const PrimFunc *f, const LowerOptions *o, LoomError *e) {
  (void)e;
  return tir_unroll(a, f, o->max_unroll_extent);
}
static const PrimFunc *standin_storage_rewrite(Arena *a, const PrimFunc *f, const LowerOptions *o, LoomError *e) {
  (void)o, (void)e;
  return tir_storage_rewrite(a, f);
}

/* TODO(merge): tir_pass_find */
static const TirPass *tir_pass_find(const char *name) {
  static const TirPass passes[] = {
      {"simplify", standin_simplify},
      {"lower_blocks", standin_lower_blocks},
      {"loop_partition", standin_loop_partition},
      {"compact_buffers", standin_compact_buffers},
      {"flatten_buffers", standin_flatten_buffers},
      {"legalize_narrow", standin_legalize_narrow},
      {"vectorize", standin_vectorize},
      {"unroll", standin_unroll},
      {"storage_rewrite", standin_storage_rewrite},
  };
  for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++)
    if (strcmp(passes[i].name, name) == 0) return &passes[i];
  return NULL;
}

#endif
