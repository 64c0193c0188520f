/* A program outside Loom's tree: it sees only the installed runtime
 * (`pkg-config --cflags --libs loomrt`). Loads MODEL.loom, the y = relu(x +
 * w) model of tests/unit/runtime/artifact_fixture.h, runs it on a fixed x and
 * checks y against the weights given on the command line (as
 * tests/cli/make_test_artifact prints them). Exit 0 when every element
 * matches. */
#include <loom/loom_runtime.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: model_runner MODEL.loom W0 W1 W2 W3 W4 W5\n");
    return 2;
  }
  char err[1024];
  loom_model *m = NULL;
  loom_model_options opt = {.num_threads = 2};
  if (loom_model_load(argv[1], &opt, &m, err, sizeof err)) {
    fprintf(stderr, "model_runner: %s\n", err);
    return 1;
  }
  /* Binary fractions, so x + w is exact and y can be compared exactly. */
  float x[6] = {-2.0f, -0.5f, 0.25f, 4.0f, 1.0f, -1.5f};
  int64_t shape[2] = {2, 3};
  DLTensor in = {.data = x, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  DLTensor y;
  int rc = 0;
  if (loom_model_set_input_by_name(m, "x", &in) || loom_model_run(m) || loom_model_get_output(m, 0, &y)) {
    fprintf(stderr, "model_runner: %s\n", loom_model_error(m));
    rc = 1;
  } else if (y.ndim != 2 || y.shape[0] != 2 || y.shape[1] != 3 || y.dtype.code != kDLFloat || y.dtype.bits != 32) {
    fprintf(stderr, "model_runner: output is not f32[2, 3]\n");
    rc = 1;
  } else {
    const float *got = y.data;
    for (int i = 0; i < 6; i++) {
      float sum = x[i] + strtof(argv[2 + i], NULL), want = sum > 0 ? sum : 0;
      if (got[i] != want) {
        fprintf(stderr, "model_runner: y[%d] = %g, expected %g\n", i, (double)got[i], (double)want);
        rc = 1;
      }
    }
  }
  if (!rc) printf("model_runner: ok (runtime %s, target %s)\n", loom_runtime_version(), loom_model_target(m));
  loom_model_free(m);
  return rc;
}
