/* Resize's operands in per-axis form (infer_resize.c), for inference and
 * the compute definition alike. */
#ifndef LOOM_GRAPH_GRAPH_RESIZE_H
#define LOOM_GRAPH_GRAPH_RESIZE_H

#include "graph/graph.h"

typedef struct GraphResizePlan {
  bool known;         /* false: an operand is not a compile-time constant, or X's shape is unknown */
  int64_t out[16];    /* output extents (-1 unknown) */
  double scales[16];  /* the scales the coordinate transform uses (have_scales), else out / in */
  bool have_scales;   /* from the scales operand, or keep_aspect_ratio_policy's common scale */
  double roi[32];     /* rank starts, then rank ends (0 and 1 where not given) */
  bool have_roi;
  /* roi is an operand but no constant (a runtime input): `roi` holds the
   * defaults and the kernel reads the region (roi_at[d]: axis d's position
   * among its roi_count starts, -1 when not covered). Decides no shape. */
  bool roi_runtime;
  int roi_at[16];
  int roi_count;
} GraphResizePlan;

/* Resolves scales / sizes (over all axes or the `axes` attribute, with
 * keep_aspect_ratio_policy) and roi of Resize node n. Errors name the node. */
loom_status graph_resize_plan(const Graph *g, const GraphNode *n, GraphResizePlan *p, LoomError *err);

#endif
