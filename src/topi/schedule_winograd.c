/* Default CPU schedule for the Winograd conv (topi_conv2d_nchwc_winograd):
 *
 *   <base>_gemm       the conv schedule as for a 1x1 conv (register tile of
 *                     columns x output-channel vectors), parallel over the
 *                     16 transform points;
 *   <base>_pad        inlined into the transform;
 *   <base>_transform  per input tile (parallel over tile rows), the 16
 *                     transform points unrolled: their selects and index
 *                     arithmetic fold to constants and the C compiler sees
 *                     16 sums of 4 loads of the same 16 input vectors;
 *   output            the block reading M (the output transform with the
 *                     group's epilogue inlined into it): per tile, the 2x2
 *                     outputs unrolled, 9 loads of M each.
 * The channel block is the vector in all of them. */
#include "topi/topi_schedule.h"

#include <string.h>

/* Splits loop l into (l / f, l % f); the inner part in *inner. */
static SchRV split2(Schedule *s, SchRV l, int64_t f, SchRV *inner) {
  SchRV parts[2];
  if (sch_split(s, l, (int64_t[]){-1, f}, 2, parts)) return -1;
  *inner = parts[1];
  return parts[0];
}

static loom_status schedule_transform(Schedule *s, SchRV b, int num_threads) {
  /* nf (16 N), co, th, tw, ci */
  SchRV l[5], e[3];
  if (sch_get_loops(s, b, l, 5) != 5) return LOOM_ERR_SCHEDULE;
  int64_t n = topi_loop_extent(s, l[0]) / 16;
  if (sch_split(s, l[0], (int64_t[]){4, 4, n}, 3, e)) return LOOM_ERR_SCHEDULE;
  SchRV order[7] = {e[2], l[2], l[1], l[3], e[0], e[1], l[4]};
  if (sch_reorder(s, order, 7) || sch_unroll(s, e[0]) || sch_unroll(s, e[1]) || sch_vectorize(s, l[4]))
    return LOOM_ERR_SCHEDULE;
  return num_threads > 1 ? sch_parallel(s, l[2]) : LOOM_OK;
}

static loom_status schedule_output(Schedule *s, SchRV b, int num_threads) {
  /* n, ko, oh, ow, ki */
  SchRV l[5], a, c;
  if (sch_get_loops(s, b, l, 5) != 5) return LOOM_ERR_SCHEDULE;
  SchRV th = split2(s, l[2], 2, &a), tw = split2(s, l[3], 2, &c);
  if (th < 0 || tw < 0) return LOOM_ERR_SCHEDULE;
  SchRV order[7] = {l[0], th, l[1], tw, a, c, l[4]};
  if (sch_reorder(s, order, 7) || sch_unroll(s, a) || sch_unroll(s, c) || sch_vectorize(s, l[4]))
    return LOOM_ERR_SCHEDULE;
  return num_threads > 1 ? sch_parallel(s, th) : LOOM_OK;
}

loom_status topi_schedule_conv2d_winograd_cpu(Schedule *s, const char *gemm, const char *output, const Target *target,
                                              int num_threads) {
  size_t n = strlen(gemm);
  if (n < 6 || strcmp(gemm + n - 5, "_gemm") != 0) return LOOM_ERR_SCHEDULE;
  Arena *a = sch_arena(s);
  const char *base = arena_strndup(a, gemm, n - 5);
  SchRV tr = sch_get_block(s, arena_printf(a, "%s_transform", base));
  if (tr < 0) return LOOM_ERR_SCHEDULE;
  /* The product's 16 transform points are independent: parallel over
   * them, one fork for the product (the conv schedule would fork once per
   * point, over the tile rows inside it). Its input channels are blocked
   * from 256 on, where a direct conv's are from 512: each element of U
   * serves one 2x2 tile, not one pixel, so U's slices stream from L2
   * sooner (ResNet-50's 14x14 Winograd convs, 256 channels: 0.1-0.18 ms
   * faster each at 1 and 2 threads; with 128 channels, 0.2-0.4 slower). */
  enum { BLOCK_MIN_CHANNELS = 256 };
  loom_status st = topi_schedule_conv2d_nchwc_blocked(s, gemm, NULL, target, 1, BLOCK_MIN_CHANNELS);
  if (st) return st;
  SchRV g = sch_get_block(s, gemm), gl[1];
  if (num_threads > 1 && (g < 0 || sch_get_loops(s, g, gl, 1) < 1 || sch_parallel(s, gl[0])))
    topi_schedule_note(s, "winograd product parallel");
  /* The padding is read once per tile, by the transform: inlined there,
   * its select costs less than a pass over the padded copy. */
  SchRV pad = sch_get_block(s, arena_printf(a, "%s_pad", base));
  if (pad >= 0 && sch_compute_inline(s, pad) && topi_schedule_copy_stage(s, pad, num_threads))
    topi_schedule_note(s, "winograd pad");
  if (schedule_transform(s, tr, num_threads)) topi_schedule_note(s, "winograd input transform");
  SchRV out = output ? sch_get_block(s, output) : -1;
  if (out >= 0 && schedule_output(s, out, num_threads)) topi_schedule_note(s, "winograd output transform");
  return LOOM_OK;
}
