/* A small kernel the tune tests tune: Y = 2 X^T, name from the format's
 * %s. Its generic schedule's space (vector width, a transpose's tile) has
 * more points than a test's batch. */
#ifndef LOOM_TESTS_UNIT_TUNE_TRANSPOSE_KERNEL_H
#define LOOM_TESTS_UNIT_TUNE_TRANSPOSE_KERNEL_H

static const char *const kTranspose2x =
    "func %s(X: f32[64, 256], Y: f32[256, 64]) {\n"
    "  block root() {\n"
    "    for i in 0:256 {\n"
    "      for j in 0:64 {\n"
    "        block Y(vi: spatial[0:256] = i, vj: spatial[0:64] = j) {\n"
    "          reads X[vj, vi]\n"
    "          writes Y[vi, vj]\n"
    "          Y[vi, vj] = (X[vj, vi] * 2.0f32)\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

#endif
