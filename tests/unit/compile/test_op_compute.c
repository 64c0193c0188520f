/* The compute table (src/compile/op_compute.c): every graph op that reaches
 * lowering has a row, and the operands the compiler reads as values are the
 * graph op table's compile-time inputs. A new op without a compute row
 * fails here by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compile/compile.h"

/* Folded away (shape metadata) or inlined by the importer (control flow)
 * before lowering, or compiled by an external back end (External): no
 * compute of their own. */
static bool folded_before_lowering(GraphOp op) {
  switch (op) {
    case GRAPH_OP_SHAPE:
    case GRAPH_OP_SIZE:
    case GRAPH_OP_CONSTANT_OF_SHAPE:
    case GRAPH_OP_RANGE:
    case GRAPH_OP_CAST_LIKE:
    case GRAPH_OP_IF:
    case GRAPH_OP_LOOP:
    case GRAPH_OP_SCAN:
    case GRAPH_OP_EXTERNAL: return true;
    default: return false;
  }
}

static void test_every_op_has_a_compute(void **state) {
  (void)state;
  for (int k = 0; k < GRAPH_OP_COUNT; k++) {
    GraphOp op = (GraphOp)k;
    if (compile_op_has_compute(op) == folded_before_lowering(op))
      fail_msg("%s: %s", graph_op_info(op)->name,
               folded_before_lowering(op) ? "folded before lowering, yet has a compute row" : "no compute row");
  }
}

static void test_input_is_data(void **state) {
  (void)state;
  GraphNode n = {0};
  n.op = GRAPH_OP_RESHAPE;
  assert_true(compile_input_is_data(&n, 0));
  assert_false(compile_input_is_data(&n, 1));
  n.op = GRAPH_OP_CLIP; /* bounds decide no shape */
  assert_true(compile_input_is_data(&n, 1) && compile_input_is_data(&n, 2));
  n.op = GRAPH_OP_RESIZE; /* roi is data, scales and sizes are not */
  assert_true(compile_input_is_data(&n, 1));
  assert_false(compile_input_is_data(&n, 2) || compile_input_is_data(&n, 3));
  n.op = GRAPH_OP_MEL_WEIGHT_MATRIX;
  assert_false(compile_input_is_data(&n, 0) || compile_input_is_data(&n, 1));
  assert_true(compile_input_is_data(&n, 2));
  n.op = GRAPH_OP_IF;
  assert_false(compile_input_is_data(&n, 0));
  n.op = GRAPH_OP_CONCAT;
  assert_true(compile_input_is_data(&n, 100));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_op_has_a_compute),
      cmocka_unit_test(test_input_is_data),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
