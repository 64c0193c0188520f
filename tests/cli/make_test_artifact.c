/* Writes the CLI tests' artifacts into DIR (argv[1]): the y = relu(x + w)
 * model of tests/unit/runtime/artifact_fixture.h as model.loom, the same
 * model for another target (other_target.loom) and from another Loom release
 * (other_version.loom). */
#include "unit/runtime/artifact_fixture.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_test_artifact DIR\n");
    return 2;
  }
  char so[4096], path[4200];
  if (fixture_build_so(argv[1], so, sizeof so)) {
    fprintf(stderr, "make_test_artifact: cannot build the test kernels in %s\n", argv[1]);
    return 1;
  }
  FixtureModel m;
  fixture_model_init(&m, so);
  static const struct {
    const char *file, *target, *version;
  } outs[] = {{"model.loom", NULL, NULL}, {"other_target.loom", "aarch64", NULL}, {"other_version.loom", NULL, "7.0.0"}};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
    m.spec.target = outs[i].target;
    m.spec.loom_version = outs[i].version;
    snprintf(path, sizeof path, "%s/%s", argv[1], outs[i].file);
    LoomError err = {0};
    if (artifact_write(path, &m.spec, &err)) {
      fprintf(stderr, "make_test_artifact: %s\n", err.msg);
      return 1;
    }
  }
  /* the weight, for the tests' reference computation */
  printf("%g %g %g %g %g %g\n", m.w[0], m.w[1], m.w[2], m.w[3], m.w[4], m.w[5]);
  return 0;
}
