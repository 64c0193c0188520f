/* The loop IR's text form: printer, parser, structural equality, verifier.
 *
 * The text is what tests are written in and what `--dump` shows, so it is
 * stable (same IR -> same bytes), diffable (one statement per line) and
 * unambiguous (the parser reads back exactly what the printer writes). The
 * grammar is in docs/tir.md. A short example:
 *
 *   func matmul(A: f32[128, 64], B: f32[64, 32], C: f32[128, 32]) {
 *     block root() {
 *       for i in 0:128 {
 *         for j in 0:32 parallel {
 *           for k in 0:64 {
 *             block C(vi: spatial[0:128] = i, vj: spatial[0:32] = j, vk: reduce[0:64] = k) {
 *               reads A[vi, vk], B[vk, vj]
 *               writes C[vi, vj]
 *               init {
 *                 C[vi, vj] = 0.0f32
 *               }
 *               C[vi, vj] = (C[vi, vj] + (A[vi, vk] * B[vk, vj]))
 *             }
 *           }
 *         }
 *       }
 *     }
 *   }
 *
 * Names: variables and buffers are nodes (pointer identity), their names
 * only labels. The printer gives every distinct node a distinct printed name
 * (two Vars named "i" print as i and i_1) and the parser makes a fresh node
 * per declaration, so print -> parse -> print is the identity on text and
 * tir_func_equal holds between the original and the parsed function. */
#ifndef LOOM_TIR_TEXT_H
#define LOOM_TIR_TEXT_H

#include "support/error.h"
#include "tir/stmt.h"

#include <stdbool.h>

struct StrBuf;

/* ---- printer ---- */
/* The whole function as text (malloc'd; the caller frees). */
char *tir_print_func(const PrimFunc *f);
/* The same text with the names taken out: every variable and buffer is
 * named from "v" by the printer's own uniquing (v, v_1, v_2, ... in the
 * order they are bound, parameters first) and the function is `main`.
 * Block names stay: they are the blocks' identity (schedules and traces
 * look blocks up by name). Functions equal under tir_func_equal print the
 * same anonymous text, except that the printer shows a no-op statement
 * inside a Seq, which tir_func_equal skips; and the same text parses back
 * into tir_func_equal functions. The tuner's workload key hashes it
 * (src/autotune/workload.h). malloc'd; the caller frees. */
char *tir_print_func_anonymous(const PrimFunc *f);
/* One statement at `indent` levels (two spaces each), names as they are
 * (made unique within this statement). For dumps and error messages. */
void tir_print_stmt(struct StrBuf *sb, const Stmt *s, int indent);

/* ---- parser ---- */
/* Parses one function. Every declaration makes a fresh Var or Buffer in `a`.
 * On bad input returns NULL and sets err to LOOM_ERR_PARSE with
 * "line L, column C: expected X, got Y". Never aborts on any input; all
 * memory it takes is in `a`. */
PrimFunc *tir_parse_func(Arena *a, const char *text, LoomError *err);

/* One expression alone: expr_parse (ir/expr_parser.h), which this parser
 * is built on. */

/* ---- structural equality ---- */
/* Same program up to renaming of variables and buffers: variables match
 * where they are bound (loops, block iterators, reduction axes; free
 * variables such as shape variables match on first use), buffers match by
 * parameter position or where they are allocated, and must agree in dtype,
 * shape, strides, scope and alignment. Block names are the blocks' identity
 * and must be equal; the function name and buffer/var names are ignored.
 * Seq nesting and no-ops inside a Seq are not differences (compared as the
 * flat list stmt_seq would build). */
bool tir_func_equal(const PrimFunc *x, const PrimFunc *y);
bool tir_stmt_equal(const Stmt *x, const Stmt *y);

/* ---- verifier ---- */
/* Checks well-formedness: every variable used is bound in scope (loop, block
 * iterator, reduction axis, or a shape/stride variable of a parameter);
 * every buffer used is a parameter or allocated in scope (block alloc or
 * Allocate); load/store/region index counts equal the buffer's ndim; a
 * store's value has the buffer's element dtype; each block iterator has one
 * binding; block names are unique; loop bounds, iterator domains and
 * bindings are int64; predicates and conditions are bool; intrinsic calls
 * have their arity. Returns LOOM_OK or LOOM_ERR_INVALID_ARG with a message
 * naming the block/loop/buffer at fault. */
loom_status tir_verify(const PrimFunc *f, LoomError *err);
/* For a lowered kernel scheduled for a local memory (f->local_mem_bytes >
 * 0; LOOM_OK for any other): its local buffers live at once fit
 * local_mem_bytes, some top-level loop nest stages data by DMA, and inside
 * such nests only DMA statements touch non-local buffers
 * (verify_scratchpad.c). LOOM_ERR_INVALID_ARG naming the kernel and the
 * buffer otherwise. tir_lower runs it last on such kernels. */
loom_status tir_verify_scratchpad(const PrimFunc *f, LoomError *err);
/* Every asynchronous DMA's tickets are within f->dma_tickets, and every
 * access to a local buffer, by loads, stores and other copies, is
 * dominated by the wait of each copy in flight on the elements it touches;
 * every copy is waited for before its buffer's scope ends
 * (verify_dma_wait.c). LOOM_OK for kernels without asynchronous DMA;
 * LOOM_ERR_INVALID_ARG naming the kernel, buffer and ticket otherwise.
 * Part of tir_verify_scratchpad. */
loom_status tir_verify_dma_waits(const PrimFunc *f, LoomError *err);

#endif
