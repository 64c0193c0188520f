/* Reference interpreter for the loop IR: the oracle that schedule primitives
 * and lowering passes are tested against before (and besides) code generation.
 *
 * It executes a PrimFunc directly on row-major arrays: param_data[i] points to
 * the elements of f->params[i] (laid out as its strides say; compact
 * row-major when it has none). Both forms of the IR run:
 *   - block-level IR: BlockRealize binds its iterators to the evaluated
 *     bindings, skips the block when the predicate is false, runs init when
 *     every reduction iterator is at its domain minimum, allocates the
 *     block's alloc_buffers for the block's lifetime;
 *   - lowered IR: Allocate, flattened 1-D buffers (strides and storage_align
 *     padding honoured), ramp/broadcast vectors evaluated lane by lane, loops
 *     of every kind executed serially, If.
 * Arithmetic follows the generated C: f32 rounds to float after every
 * operation, integers wrap at their width, DIV/MOD truncate, FLOORDIV/FLOORMOD
 * round toward -inf, select and &&/|| evaluate only what C would.
 *
 * Everything a wrong schedule can do is reported as an error, never a crash:
 * an out-of-bounds load or store (message names the buffer and the index), a
 * block iterator bound outside its domain, a read of a temporary element
 * that was never written, division by zero, an unbound variable. */
#ifndef LOOM_TIR_INTERP_H
#define LOOM_TIR_INTERP_H

#include "support/error.h"
#include "tir/stmt.h"

typedef struct TirInterpOptions {
  /* Report reads of temporaries (alloc_buffers, Allocate) before any write
   * to that element. Temporaries are zero-filled, so without the check such
   * a read silently sees 0 while compiled code sees garbage. */
  bool check_uninit;
  /* Report block iterators whose binding falls outside the iterator domain
   * (with a true predicate). */
  bool check_iter_domain;
  /* When not NULL, every DMA copy executed (a blocking one at its
   * statement, an asynchronous one at its wait) adds one call and its
   * bytes here (the tests count them against the tiling). */
  struct TirDmaStats *dma_stats;
} TirInterpOptions;

/* What the DMA statements of one run moved. */
typedef struct TirDmaStats {
  int64_t gets, puts;             /* statements executed */
  int64_t get_bytes, put_bytes;   /* elements x element size */
  int64_t waits;                  /* waits for asynchronous copies */
} TirDmaStats;

/* Both checks on, no DMA counting. */
TirInterpOptions tir_interp_default_options(void);

/* Runs f over param_data (one pointer per parameter). LOOM_OK on success;
 * otherwise LOOM_ERR_RUNTIME (the program did something wrong: out of
 * bounds, division by zero...), LOOM_ERR_UNSUPPORTED (f16/bf16, reductions
 * left from te) or LOOM_ERR_INVALID_ARG (NULL data, non-constant shapes)
 * with a message in err. Outputs may be partly written on error. */
loom_status tir_interpret(const PrimFunc *f, void *const *param_data, LoomError *err);
loom_status tir_interpret_opts(const PrimFunc *f, void *const *param_data,
                               const TirInterpOptions *opts, LoomError *err);

/* Number of elements the caller must provide for parameter buffer b (the
 * extent its strides span; the product of its shape when compact). -1 when
 * the shape is not constant. */
int64_t tir_buffer_elem_count(const Buffer *b);

#endif
