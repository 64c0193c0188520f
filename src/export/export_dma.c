/* The DMA hooks of an exported scratchpad model (docs/export.md
 * "Scratchpad targets"): kernels built for a target with a local memory
 * (--target-opt local_mem=SIZE) copy their tiles between global and local
 * buffers with loom_dma_get / loom_dma_put (and _2d for strided rows). In
 * the project they are PREFIX_dma_get..., so two exported models never
 * collide, and PREFIX.c carries a default of each (a synchronous memcpy),
 * compiled unless PREFIX_DMA_EXTERNAL is defined: a project for a board
 * with a DMA engine defines it and links its own functions of the same
 * signatures. */
#include "export/export.h"

static bool uses_local_memory(const CompileModelParts *parts) {
  for (int i = 0; i < parts->nfuncs; i++)
    if (parts->funcs[i]->local_mem_bytes > 0) return true;
  return false;
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
            " * (each copy must be complete when the call returns). */\n"
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
              "    size_t src_stride) {\n"
              "  for (size_t r = 0; r < rows; ++r)\n"
              "    memcpy((char *)dst + r * dst_stride, (const char *)src + r * src_stride, row_bytes);\n"
              "}\n",
              p, hooks[i]);
  sb_puts(out, "#endif\n\n");
}
