/* The compute table (src/compile/op_compute.c): every graph op has a row
 * unless the importer refuses or removes it (control flow) or a back end
 * compiles it (External), and the operands the compiler reads as values
 * are the graph op table's compile-time inputs. A new op without a compute
 * row fails here by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compile/compile.h"

/* The ops with no compute row, each with where it is handled instead:
 * If, Loop and Scan never reach lowering (onnx_inline_control_flow inlines
 * every one or refuses the model at import, naming the node), External is
 * compiled by its BYOC back end. Every other op may reach lowering: folding
 * removes Shape, Size, ConstantOfShape, Range and CastLike when it can,
 * but not past its size limits (a 256x256x3x3 ConstantOfShape that is not
 * a weight), nor Shape/Size of a data-dependent extent, so those have rows
 * too. Adding an op here needs the same kind of guarantee. */
static const char *handled_without_compute(GraphOp op) {
  switch (op) {
    case GRAPH_OP_IF:
    case GRAPH_OP_LOOP:
    case GRAPH_OP_SCAN: return "inlined or refused at import";
    case GRAPH_OP_EXTERNAL: return "compiled by its back end";
    default: return NULL;
  }
}

static void test_every_op_has_a_compute(void **state) {
  (void)state;
  int failures = 0;
  for (int k = 0; k < GRAPH_OP_COUNT; k++) {
    GraphOp op = (GraphOp)k;
    const char *instead = handled_without_compute(op);
    if (compile_op_has_compute(op) == (instead != NULL)) {
      print_error("%s: %s\n", graph_op_info(op)->name,
                  instead ? "has a compute row, yet is listed as handled without one"
                          : "no compute row and no import-time refusal");
      failures++;
    }
  }
  assert_int_equal(failures, 0);
}

/* The ops folding usually removes compute what it would have folded to. */
static void test_fold_leftovers_have_computes(void **state) {
  (void)state;
  const GraphOp ops[] = {GRAPH_OP_SHAPE, GRAPH_OP_SIZE, GRAPH_OP_CONSTANT_OF_SHAPE, GRAPH_OP_RANGE,
                         GRAPH_OP_CAST_LIKE, GRAPH_OP_EYE_LIKE};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) assert_true(compile_op_has_compute(ops[k]));
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
      cmocka_unit_test(test_fold_leftovers_have_computes),
      cmocka_unit_test(test_input_is_data),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
