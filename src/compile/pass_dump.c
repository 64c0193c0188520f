/* --dump-before / --dump-after: selecting the passes (comma lists of the
 * names loom_compile_pass_info lists) and printing the IR around them.
 * Every dump opens with one `#` line, a comment in both the graph and the
 * loop IR text, so a dump can be cut out and parsed back:
 *   # ---- after fold_batchnorm (graph step 2) ----
 *   # ---- before vectorize (lowering step 10) kernel k0_add ---- */
#include "compile/pass_dump.h"

#include "loom/loom_compile.h"
#include "support/alloc.h"
#include "support/strbuf.h"
#include "tir/text.h"

#include <inttypes.h>
#include <string.h>

/* The item of `list` starting at `s` runs to the next comma or the end. */
static size_t item_length(const char *s) {
  const char *comma = strchr(s, ',');
  return comma ? (size_t)(comma - s) : strlen(s);
}

static bool item_is(const char *s, size_t len, const char *name) {
  return strlen(name) == len && !strncmp(s, name, len);
}

bool pass_dump_named(const char *list, const char *pass) {
  for (const char *s = list; s;) {
    size_t len = item_length(s);
    if (item_is(s, len, "all") || item_is(s, len, pass)) return true;
    s = s[len] ? s + len + 1 : NULL;
  }
  return false;
}

static bool is_pass_name(const char *s, size_t len) {
  loom_pass_info info;
  for (int i = 0; loom_compile_pass_info(i, &info); i++)
    if (item_is(s, len, info.name)) return true;
  return false;
}

/* Each name once, in pipeline order (dce and simplify run at several steps). */
static void print_pass_names(StrBuf *sb) {
  loom_pass_info info, earlier;
  for (int i = 0; loom_compile_pass_info(i, &info); i++) {
    bool seen = false;
    for (int k = 0; k < i && !seen; k++) seen = loom_compile_pass_info(k, &earlier) && !strcmp(earlier.name, info.name);
    if (!seen) sb_printf(sb, "%s%s", sb->len ? ", " : "", info.name);
  }
}

loom_status loom_compile_check_pass_list(const char *list, char *errbuf, size_t errlen) {
  for (const char *s = list; s;) {
    size_t len = item_length(s);
    if (len == 0 || (!item_is(s, len, "all") && !is_pass_name(s, len))) {
      StrBuf names;
      sb_init(&names);
      print_pass_names(&names);
      if (errbuf && errlen && len == 0)
        snprintf(errbuf, errlen, "an empty pass name in \"%s\" (expected a comma list of: %s; or all)", list,
                 sb_cstr(&names));
      else if (errbuf && errlen)
        snprintf(errbuf, errlen, "unknown pass \"%.*s\" (expected a comma list of: %s; or all)", (int)len, s,
                 sb_cstr(&names));
      sb_free(&names);
      return LOOM_ERR_INVALID_ARG;
    }
    s = s[len] ? s + len + 1 : NULL;
  }
  return LOOM_OK;
}

static bool names_lowering(const char *list) {
  loom_pass_info info;
  for (int i = 0; loom_compile_pass_info(i, &info); i++)
    if (!strcmp(info.level, "lowering") && pass_dump_named(list, info.name)) return true;
  return false;
}

bool pass_dump_wants_lowering(const PassDump *d) {
  return d && (names_lowering(d->before) || names_lowering(d->after));
}

static void print_memory_plan(const Graph *g, const GraphMemoryPlan *mem, StrBuf *sb) {
  sb_printf(sb, "# arena: %" PRId64 " bytes (intermediate tensors: %" PRId64 " bytes)\n", mem->arena_size,
            mem->intermediate_bytes);
  for (int v = 0; v < mem->nvalues; v++)
    if (mem->offset[v] >= 0)
      sb_printf(sb, "#   %%%s: offset %" PRId64 ", %" PRId64 " bytes\n", g->values[v].name, mem->offset[v],
                mem->size[v]);
}

void pass_dump_graph(const PassDump *d, const char *pass, int step, bool after, const Graph *g,
                     const GraphFusionPlan *plan, const GraphMemoryPlan *mem) {
  if (!d || !pass_dump_named(after ? d->after : d->before, pass)) return;
  StrBuf sb;
  sb_init(&sb);
  sb_printf(&sb, "# ---- %s %s (graph step %d) ----\n", after ? "after" : "before", pass, step);
  graph_print(g, &sb);
  if (plan) graph_fusion_plan_print(g, plan, &sb);
  if (mem) print_memory_plan(g, mem, &sb);
  fputs(sb_cstr(&sb), d->out);
  sb_free(&sb);
}

void pass_dump_tir(void *user, const char *pass, int step, bool after, const PrimFunc *f) {
  const PassDump *d = user;
  if (!pass_dump_named(after ? d->after : d->before, pass)) return;
  char *text = tir_print_func(f);
  fprintf(d->out, "# ---- %s %s (lowering step %d) kernel %s ----\n%s", after ? "after" : "before", pass, step,
          f->name, text);
  loom_free(text);
}

void pass_dump_set_hook(PassDump *d, LowerOptions *lo) {
  if (!pass_dump_wants_lowering(d)) return;
  lo->dump = pass_dump_tir;
  lo->dump_user = d;
}
