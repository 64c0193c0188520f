/* The DMA hooks of an exported scratchpad model (docs/export.md
 * "Scratchpad targets"): kernels built for a target with a local memory
 * (--target-opt local_mem=SIZE) copy their tiles between global and local
 * buffers with loom_dma_get / loom_dma_put (and _2d for strided rows),
 * and with dma=double start the copies of the next tile with the _async
 * forms and a ticket, then loom_dma_wait for it before its first use. In
 * the project they are PREFIX_dma_get..., so two exported models never
 * collide, and PREFIX.c carries a default of each (a synchronous memcpy:
 * a start copies, a wait returns), compiled unless PREFIX_DMA_EXTERNAL is
 * defined: a project for a board with a DMA engine defines it and links
 * its own functions of the same signatures (and, with asynchronous copies,
 * defines the ticket type in its PREFIX_dma.h). */
#include "export/export.h"

static bool uses_local_memory(const CompileModelParts *parts) {
  for (int i = 0; i < parts->nfuncs; i++)
    if (parts->funcs[i]->local_mem_bytes > 0) return true;
  return false;
}

static const char k_copy_rows[] =
    "  for (size_t r = 0; r < rows; ++r)\n"
    "    memcpy((char *)dst + r * dst_stride, (const char *)src + r * src_stride, row_bytes);\n";

static void async_hooks(const ExportModel *m, StrBuf *out) {
  const char *p = m->prefix;
  sb_printf(out,
            "/* Asynchronous copies (dma=double): PREFIX_dma_*_async starts a copy and\n"
            " * returns; the kernel then calls %s_dma_wait with the same ticket before\n"
            " * it reads the destination (or reuses the source), so the engine copies\n"
            " * while the core computes. The kernel owns each ticket (an array on its\n"
            " * stack) from the start to the wait; the engine may keep in it whatever it\n"
            " * needs to find the transfer again (a channel, a reply word, a descriptor).\n"
            " * With -D%s_DMA_EXTERNAL the project's %s_dma.h defines %s_dma_ticket. */\n",
            p, m->upper, p, p);
  static const char *const names[] = {"get_async", "put_async", "get2d_async", "put2d_async", "wait", "ticket"};
  for (int i = 0; i < 6; i++) sb_printf(out, "#define loom_dma_%s %s_dma_%s\n", names[i], p, names[i]);
  sb_printf(out,
            "#ifdef %s_DMA_EXTERNAL\n#include \"%s_dma.h\"\n#else\n"
            "typedef struct %s_dma_ticket { char unused; } %s_dma_ticket;\n#endif\n",
            m->upper, p, p, p);
  for (int i = 0; i < 2; i++)
    sb_printf(out, "void %s_dma_%s(%s_dma_ticket *ticket, void *dst, const void *src, size_t bytes);\n", p, names[i], p);
  for (int i = 2; i < 4; i++)
    sb_printf(out,
              "void %s_dma_%s(%s_dma_ticket *ticket, void *dst, const void *src, size_t row_bytes, size_t rows,\n"
              "    size_t dst_stride, size_t src_stride);\n",
              p, names[i], p);
  sb_printf(out, "void %s_dma_wait(%s_dma_ticket *ticket);\n", p, p);
  sb_printf(out, "#ifndef %s_DMA_EXTERNAL\n", m->upper);
  for (int i = 0; i < 2; i++)
    sb_printf(out,
              "void %s_dma_%s(%s_dma_ticket *ticket, void *dst, const void *src, size_t bytes) {\n"
              "  (void)ticket;\n  memcpy(dst, src, bytes);\n}\n",
              p, names[i], p);
  for (int i = 2; i < 4; i++)
    sb_printf(out,
              "void %s_dma_%s(%s_dma_ticket *ticket, void *dst, const void *src, size_t row_bytes, size_t rows,\n"
              "    size_t dst_stride, size_t src_stride) {\n  (void)ticket;\n%s}\n",
              p, names[i], p, k_copy_rows);
  sb_printf(out, "void %s_dma_wait(%s_dma_ticket *ticket) { (void)ticket; }\n#endif\n", p, p);
}

void export_dma_source(const ExportModel *m, const CompileModelParts *parts, StrBuf *out) {
  if (!uses_local_memory(parts)) return;
  static const char *const hooks[] = {"get", "put", "get2d", "put2d"};
  const char *p = m->prefix;
  sb_printf(out,
            "/* ---- DMA hooks: the kernels stage their tiles in local memory ----\n"
            " * Sizes and strides in bytes; a _2d copy moves `rows` rows of row_bytes,\n"
            " * row r from src + r * src_stride to dst + r * dst_stride. The\n"
            " * definitions at the end of this block are synchronous copies: build with\n"
            " * -D%s_DMA_EXTERNAL and link your own %s_dma_* to use a DMA engine\n"
            " * (each blocking copy must be complete when the call returns). */\n"
            "#define LOOM_DMA_HOOKS\n",
            m->upper, p);
  for (int i = 0; i < 4; i++) sb_printf(out, "#define loom_dma_%s %s_dma_%s\n", hooks[i], p, hooks[i]);
  for (int i = 0; i < 2; i++)
    sb_printf(out, "void %s_dma_%s(void *dst, const void *src, size_t bytes);\n", p, hooks[i]);
  for (int i = 2; i < 4; i++)
    sb_printf(out,
              "void %s_dma_%s(void *dst, const void *src, size_t row_bytes, size_t rows, size_t dst_stride,\n"
              "    size_t src_stride);\n",
              p, hooks[i]);
  sb_printf(out, "#ifndef %s_DMA_EXTERNAL\n", m->upper);
  for (int i = 0; i < 2; i++)
    sb_printf(out, "void %s_dma_%s(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }\n", p,
              hooks[i]);
  for (int i = 2; i < 4; i++)
    sb_printf(out,
              "void %s_dma_%s(void *dst, const void *src, size_t row_bytes, size_t rows, size_t dst_stride,\n"
              "    size_t src_stride) {\n%s}\n",
              p, hooks[i], k_copy_rows);
  sb_puts(out, "#endif\n");
  sb_printf(out,
            "/* The local memory: each kernel's local buffers sit at fixed offsets of\n"
            " * one region (its plan: \"local memory plan\" in the kernel). Build with\n"
            " * -D%s_LOCAL_MEM_BASE=ADDRESS (a pointer expression to local_mem bytes,\n"
            " * such as ((char *)0x10000000)) to place them in the core's local memory;\n"
            " * by default they are a slice of the workspace. */\n"
            "#ifdef %s_LOCAL_MEM_BASE\n#define LOOM_LOCAL_MEM_BASE %s_LOCAL_MEM_BASE\n#endif\n",
            m->upper, m->upper, m->upper);
  /* The kernels are lowered after this block: dma=double is what may give
   * them asynchronous copies (tir_inject_dma). */
  if (parts->target.dma_double_buffer) async_hooks(m, out);
  sb_puts(out, "\n");
}
