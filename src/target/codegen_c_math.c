/* Vector versions of the math calls that dominate activations and
 * normalizations (exp in softmax, erf in GELU, tanh), so a vectorized loop
 * does not call libm once per lane.
 *
 * Accuracy: exp is Cephes' expf (range reduction by ln 2 in two parts, a
 * degree-5 polynomial, exponent by bit manipulation): about 1 ulp on
 * [-87.3, 88.7]; below that it returns 0, above +inf. erf and tanh are the
 * rational approximations Eigen uses for float (odd numerator / even
 * denominator in x^2 on a clamped range): a few ulp. Every result is well
 * within the 1e-5 relative tolerance the schedule tests and the 1e-4 the
 * model tests use against libm / ONNX Runtime. NaN inputs give NaN for erf
 * and tanh (arithmetic propagates it); exp of NaN is unspecified. Infinite
 * inputs give the limits (exp(-inf) = 0, tanh(+-inf) = +-1, erf(+-inf) = +-1). */
#include "target/codegen_c_internal.h"

static const char *math_name(CodegenC *cg, const char *op, DType t) {
  return arena_printf(cg->arena, "loom_v%s_%s", op, cg_vector_type(cg, t));
}

/* loom_vsel_<vt>(mask, a, b): lane-wise mask ? a : b by bit blending
 * (the vector ?: operator is C++/OpenCL only in clang). */
static const char *vector_select(CodegenC *cg, DType t) {
  const char *vt = cg_vector_type(cg, t), *name = math_name(cg, "sel", t);
  const char *it = cg_vector_type(cg, dtype_make(DT_INT, 32, t.lanes));
  const char *def = arena_printf(cg->arena,
                                 "LOOM_HELPER %s %s(%s m, %s a, %s b) {\n"
                                 "  %s ai, bi, r;\n"
                                 "  memcpy(&ai, &a, sizeof ai);\n"
                                 "  memcpy(&bi, &b, sizeof bi);\n"
                                 "  r = (ai & m) | (bi & ~m);\n"
                                 "  %s out;\n"
                                 "  memcpy(&out, &r, sizeof out);\n"
                                 "  return out;\n"
                                 "}\n",
                                 vt, name, it, vt, vt, it, vt);
  cg_put_helper(cg, name, def);
  return name;
}

static const char *vector_exp(CodegenC *cg, DType t) {
  const char *sel = vector_select(cg, t);
  const char *vt = cg_vector_type(cg, t), *name = math_name(cg, "exp", t);
  const char *it = cg_vector_type(cg, dtype_make(DT_INT, 32, t.lanes));
  const char *def = arena_printf(
      cg->arena,
      "LOOM_HELPER %s %s(%s x) {\n"
      "  const %s zero = {0}; /* not x - x: NaN for infinite lanes */\n"
      "  %s hi = (x > 88.72283935546875f), lo = (x < -87.33654022216797f);\n"
      "  x = %s(hi, zero + 88.0f, %s(lo, zero - 87.0f, x));\n"
      "  %s t = x * 1.44269504088896341f + 0.5f;\n"
      "  %s n = __builtin_convertvector(t, %s);\n"
      "  n = n + (__builtin_convertvector(n, %s) > t); /* floor: a true lane compares as -1 */\n"
      "  %s fx = __builtin_convertvector(n, %s);\n"
      "  x = x - fx * 0.693359375f + fx * 2.12194440e-4f;\n"
      "  %s z = x * x;\n"
      "  %s y = ((((1.9875691500E-4f * x + 1.3981999507E-3f) * x + 8.3334519073E-3f) * x + 4.1665795894E-2f) * x +\n"
      "          1.6666665459E-1f) * x + 5.0000001201E-1f;\n"
      "  y = y * z + x + 1.0f;\n"
      "  /* 2^n in two halves: 2^128 and 2^-126 are not normal floats. */\n"
      "  %s e1 = ((n >> 1) + 127) << 23, e2 = ((n - (n >> 1)) + 127) << 23;\n"
      "  %s s1, s2;\n"
      "  memcpy(&s1, &e1, sizeof s1);\n"
      "  memcpy(&s2, &e2, sizeof s2);\n"
      "  y = y * s1 * s2;\n"
      "  return %s(hi, zero + __builtin_inff(), %s(lo, zero, y));\n"
      "}\n",
      vt, name, vt, vt, it, sel, sel, vt, it, it, vt, vt, vt, vt, vt, it, vt, sel, sel);
  cg_put_helper(cg, name, def);
  return name;
}

static const char *vector_erf(CodegenC *cg, DType t) {
  const char *sel = vector_select(cg, t);
  const char *vt = cg_vector_type(cg, t), *name = math_name(cg, "erf", t);
  const char *def = arena_printf(
      cg->arena,
      "LOOM_HELPER %s %s(%s a) {\n"
      "  const %s zero = {0}; /* not a - a: NaN for infinite lanes */\n"
      "  %s x = %s(a > 4.0f, zero + 4.0f, %s(a < -4.0f, zero - 4.0f, a));\n"
      "  %s x2 = x * x;\n"
      "  %s p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;\n"
      "  p = p * x2 - 2.10102402082508e-06f;\n"
      "  p = p * x2 - 5.69250639462346e-05f;\n"
      "  p = p * x2 - 7.34990630326855e-04f;\n"
      "  p = p * x2 - 2.95459980854025e-03f;\n"
      "  p = p * x2 - 1.60960333262415e-02f;\n"
      "  p = p * x;\n"
      "  %s q = x2 * -1.45660718464996e-05f - 2.13374055278905e-04f;\n"
      "  q = q * x2 - 1.68282697438203e-03f;\n"
      "  q = q * x2 - 7.37332916720468e-03f;\n"
      "  q = q * x2 - 1.42647390514189e-02f;\n"
      "  return p / q;\n"
      "}\n",
      vt, name, vt, vt, vt, sel, sel, vt, vt, vt);
  cg_put_helper(cg, name, def);
  return name;
}

static const char *vector_tanh(CodegenC *cg, DType t) {
  const char *sel = vector_select(cg, t);
  const char *vt = cg_vector_type(cg, t), *name = math_name(cg, "tanh", t);
  const char *def = arena_printf(
      cg->arena,
      "LOOM_HELPER %s %s(%s a) {\n"
      "  /* Beyond +-7.9 tanh is +-1 in float; near 0 it is x. */\n"
      "  const %s zero = {0}; /* not a - a: NaN for infinite lanes */\n"
      "  %s x = %s(a > 7.90531110763549805f, zero + 7.90531110763549805f,\n"
      "           %s(a < -7.90531110763549805f, zero - 7.90531110763549805f, a));\n"
      "  %s x2 = x * x;\n"
      "  %s p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;\n"
      "  p = p * x2 - 8.60467152213735e-11f;\n"
      "  p = p * x2 + 5.12229709037114e-08f;\n"
      "  p = p * x2 + 1.48572235717979e-05f;\n"
      "  p = p * x2 + 6.37261928875436e-04f;\n"
      "  p = p * x2 + 4.89352455891786e-03f;\n"
      "  p = p * x;\n"
      "  %s q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;\n"
      "  q = q * x2 + 2.26843463243900e-03f;\n"
      "  q = q * x2 + 4.89352518554385e-03f;\n"
      "  %s r = p / q;\n"
      "  return %s((a < 0.0004f) & (a > -0.0004f), a, r);\n"
      "}\n",
      vt, name, vt, vt, vt, sel, sel, vt, vt, vt, vt, sel);
  cg_put_helper(cg, name, def);
  return name;
}

const char *cg_vector_math(CodegenC *cg, CallOp op, DType t) {
  if (t.code != DT_FLOAT || t.bits != 32 || t.lanes < 2) return NULL;
  switch (op) {
    case CALL_EXP: return vector_exp(cg, t);
    case CALL_ERF: return vector_erf(cg, t);
    case CALL_TANH: return vector_tanh(cg, t);
    default: return NULL;
  }
}
