/* Conversions of Loom's narrow element types to and from f32.
 *
 * Loom stores f16, bf16, the 8- and 4-bit floats and the 4- and 2-bit
 * integers in memory (one element per 16-bit or 8-bit word: sub-byte types
 * take one byte each in memory and are packed only in files) and computes
 * in f32 (int32 for the integers): the lowering pass tir_legalize_narrow
 * widens every load with one of the *_to_f32 functions below and rounds
 * every store with one of the f32_to_* functions. The same functions serve
 * the compiler (reference interpreter, constant folding, tensor files), so
 * the kernels and the compiler agree bit for bit.
 *
 * Semantics are numpy's / ml_dtypes' (what ONNX's reference implementation
 * uses): every conversion to a narrower float rounds to nearest, ties to
 * even, once ("natural" conversion). A value too large for the format
 * becomes inf where the format has one (f16, bf16, e5m2), NaN where it has
 * only NaN (e4m3fn: S.1111.111; the *fnuz formats: 0x80) and the largest
 * finite value where it has neither (e2m1). ONNX's saturating Cast clamps
 * to the largest finite value before calling these (topi_cast). NaN stays
 * NaN (quiet; f16/bf16 keep the payload's top bits); the fnuz formats have
 * no -0, so a negative value that rounds to zero becomes +0. Integers:
 * conversion to int4/uint4/int2/uint2 keeps the low bits (two's complement
 * wrap, like C's conversion to a narrower unsigned type).
 *
 * Formats (bias; largest finite; specials):
 *   f16      IEEE binary16 (15; 65504; inf, NaN)
 *   bf16     the top half of an f32 (127; 3.39e38; inf, NaN)
 *   f8e4m3fn     (7; 448; NaN = S.1111.111, no inf)
 *   f8e4m3fnuz   (8; 240; NaN = 0x80, no inf, no -0)
 *   f8e5m2       (15; 57344; IEEE-like inf and NaN)
 *   f8e5m2fnuz   (16; 57344; NaN = 0x80, no inf, no -0)
 *   f8e8m0       exponent only, unsigned (127; 2^127; NaN = 0xff), 2^(c-127)
 *   f4e2m1       (1; 6; no inf, no NaN) values 0 0.5 1 1.5 2 3 4 6
 *
 * With F16C (x86 -mf16c, implied by -march=native on any AVX2 machine) the
 * f16 conversions are one instruction each; the portable path is exact and
 * gives identical results (tests/unit/ir/test_convert.c checks both).
 *
 * Only libc: generated kernels include this header. */
#ifndef LOOM_CONVERT_H
#define LOOM_CONVERT_H

#include <stdint.h>
#include <string.h>

#if defined(__F16C__) && !defined(LOOM_CONVERT_PORTABLE)
#include <immintrin.h>
#define LOOM_CONVERT_F16C 1
#endif

static inline float loom_bits_to_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint32_t loom_f32_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* ---- f16 ---- */

static inline float loom_f16_to_f32(uint16_t h) {
#ifdef LOOM_CONVERT_F16C
  return _cvtsh_ss(h);
#else
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return loom_bits_to_f32(sign | 0x7f800000 | (m ? 0x400000 | m << 13 : 0)); /* inf; NaN made quiet */
  if (e) return loom_bits_to_f32(sign | (e + 112) << 23 | m << 13);                           /* rebias 15 -> 127 */
  return loom_bits_to_f32(sign | loom_f32_to_bits((float)m * 0x1p-24f));                     /* zero, subnormal */
#endif
}

static inline uint16_t loom_f32_to_f16(float f) {
#ifdef LOOM_CONVERT_F16C
  return (uint16_t)_cvtss_sh(f, 0); /* 0: round to nearest even */
#else
  uint32_t u = loom_f32_to_bits(f), a = u & 0x7fffffff;
  uint16_t sign = (uint16_t)(u >> 16 & 0x8000);
  if (a > 0x7f800000) return sign | 0x7e00 | (uint16_t)(a >> 13 & 0x3ff); /* NaN: quiet, payload's top bits */
  if (a >= 0x477ff000) return sign | 0x7c00;                             /* >= 65520 (and inf): inf */
  if (a < 0x38800000) {
    /* below 2^-14: a subnormal or zero; scaling by 2^24 is exact and the
     * addition of 2^23 rounds to an integer, to nearest even */
    float t = loom_bits_to_f32(a) * 0x1p24f + 0x1p23f;
    return sign | (uint16_t)(loom_f32_to_bits(t) - 0x4b000000);
  }
  a -= (uint32_t)(127 - 15) << 23;
  a += 0xfff + (a >> 13 & 1); /* round the 13 dropped bits to nearest even */
  return sign | (uint16_t)(a >> 13);
#endif
}

/* Rounds once (numpy's double -> half): no detour through f32. */
static inline uint16_t loom_f64_to_f16(double d) {
  uint64_t u, a;
  memcpy(&u, &d, 8);
  a = u & 0x7fffffffffffffffull;
  uint16_t sign = (uint16_t)(u >> 48 & 0x8000);
  if (a > 0x7ff0000000000000ull) return sign | 0x7e00 | (uint16_t)(a >> 42 & 0x3ff);
  if (a >= 0x40effe0000000000ull) return sign | 0x7c00; /* >= 65520 */
  if (a < 0x3f10000000000000ull) {                      /* below 2^-14 */
    double t;
    memcpy(&t, &a, 8);
    t = t * 0x1p24 + 0x1p52;
    memcpy(&a, &t, 8);
    return sign | (uint16_t)(a - 0x4330000000000000ull);
  }
  a -= (uint64_t)(1023 - 15) << 52;
  a += 0x1ffffffffffull + (a >> 42 & 1);
  return sign | (uint16_t)(a >> 42);
}

/* n contiguous values at once: with F16C one vcvtph2ps / vcvtps2ph per 8
 * (AVX-512: 16) lanes, where the per-lane calls above do not vectorize.
 * Generated kernels call these for their vector conversions. */
static inline void loom_f16_to_f32_n(const uint16_t *src, float *dst, int n) {
  int i = 0;
#ifdef LOOM_CONVERT_F16C
#ifdef __AVX512F__
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
#endif
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
#endif
  for (; i < n; i++) dst[i] = loom_f16_to_f32(src[i]);
}

static inline void loom_f32_to_f16_n(const float *src, uint16_t *dst, int n) {
  int i = 0;
#ifdef LOOM_CONVERT_F16C
#ifdef __AVX512F__
  for (; i + 16 <= n; i += 16) _mm256_storeu_si256((__m256i *)(dst + i), _mm512_cvtps_ph(_mm512_loadu_ps(src + i), 0));
#endif
  for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), 0));
#endif
  for (; i < n; i++) dst[i] = loom_f32_to_f16(src[i]);
}

/* ---- bf16 ---- */

static inline float loom_bf16_to_f32(uint16_t h) { return loom_bits_to_f32((uint32_t)h << 16); }

static inline uint16_t loom_f32_to_bf16(float f) {
  uint32_t u = loom_f32_to_bits(f);
  uint32_t rounded = (u + 0x7fff + (u >> 16 & 1)) >> 16; /* overflow rounds to inf */
  uint32_t nan = u >> 16 | 0x40;                          /* NaN: quiet */
  return (uint16_t)((u & 0x7fffffff) > 0x7f800000 ? nan : rounded); /* a select: vectorizes */
}

/* ---- 8- and 4-bit floats, by their parameters ----
 * kind: how the format spells what does not fit. */
enum {
  LOOM_MF_IEEE = 0, /* exponent all ones: inf (mantissa 0) or NaN (e5m2) */
  LOOM_MF_FN = 1,   /* no inf; S.1..1.1..1 is NaN (e4m3fn) */
  LOOM_MF_FNUZ = 2, /* no inf, no -0; 1.0..0 is the only NaN */
  LOOM_MF_SAT = 3,  /* no inf, no NaN (e2m1): overflow saturates */
};

static inline float loom_minifloat_to_f32(uint32_t c, int ebits, int mbits, int bias, int kind) {
  int nbits = 1 + ebits + mbits;
  uint32_t sign = c >> (nbits - 1) & 1, emax = (1u << ebits) - 1, mmax = (1u << mbits) - 1;
  uint32_t e = c >> mbits & emax, m = c & mmax, u;
  if ((kind == LOOM_MF_FNUZ && c == 1u << (nbits - 1)) || (kind == LOOM_MF_FN && e == emax && m == mmax) ||
      (kind == LOOM_MF_IEEE && e == emax && m))
    return loom_bits_to_f32(sign << 31 | 0x7fc00000);
  if (kind == LOOM_MF_IEEE && e == emax) return loom_bits_to_f32(sign << 31 | 0x7f800000);
  if (e) u = (e + 127 - (uint32_t)bias) << 23 | m << (23 - mbits);
  else u = loom_f32_to_bits((float)m * loom_bits_to_f32((uint32_t)(127 + 1 - bias - mbits) << 23));
  return loom_bits_to_f32(sign << 31 | u);
}

static inline uint32_t loom_f32_to_minifloat(float f, int ebits, int mbits, int bias, int kind) {
  int nbits = 1 + ebits + mbits;
  uint32_t u = loom_f32_to_bits(f), a = u & 0x7fffffff, top = 1u << (nbits - 1);
  uint32_t sign = u >> 31 ? top : 0, code;
  uint32_t maxcode = kind == LOOM_MF_IEEE ? (((1u << ebits) - 1) << mbits) - 1 : kind == LOOM_MF_FN ? top - 2 : top - 1;
  if (a > 0x7f800000) {
    if (kind == LOOM_MF_FNUZ) return top;
    if (kind == LOOM_MF_FN) return sign | (top - 1);
    if (kind == LOOM_MF_IEEE) return sign | ((1u << ebits) - 1) << mbits | 1u << (mbits - 1);
    return sign ^ top; /* no NaN: ml_dtypes gives -0 for +NaN and +0 for -NaN */
  }
  if (a >> 23 < (uint32_t)(127 + 1 - bias)) {
    /* a subnormal of the format (or zero): scale to units of the smallest
     * subnormal (exact) and round to an integer, to nearest even */
    float t = loom_bits_to_f32(a) * loom_bits_to_f32((uint32_t)(127 + bias + mbits - 1) << 23) + 0x1p23f;
    code = loom_f32_to_bits(t) - 0x4b000000;
  } else {
    int shift = 23 - mbits;
    code = (a + (1u << (shift - 1)) - 1 + (a >> shift & 1)) >> shift;
    code -= (uint32_t)(127 - bias) << mbits;
  }
  if (code > maxcode) {
    if (kind == LOOM_MF_IEEE) return sign | ((1u << ebits) - 1) << mbits;
    if (kind == LOOM_MF_FN) return sign | (top - 1);
    if (kind == LOOM_MF_FNUZ) return top;
    return sign | maxcode;
  }
  if (kind == LOOM_MF_FNUZ && code == 0) return 0;
  return sign | code;
}

#define LOOM_MINIFLOAT(NAME, E, M, BIAS, KIND)                                                           \
  static inline float loom_##NAME##_to_f32(uint8_t c) { return loom_minifloat_to_f32(c, E, M, BIAS, KIND); } \
  static inline uint8_t loom_f32_to_##NAME(float f) { return (uint8_t)loom_f32_to_minifloat(f, E, M, BIAS, KIND); }
LOOM_MINIFLOAT(f8e4m3fn, 4, 3, 7, LOOM_MF_FN)
LOOM_MINIFLOAT(f8e4m3fnuz, 4, 3, 8, LOOM_MF_FNUZ)
LOOM_MINIFLOAT(f8e5m2, 5, 2, 15, LOOM_MF_IEEE)
LOOM_MINIFLOAT(f8e5m2fnuz, 5, 2, 16, LOOM_MF_FNUZ)
LOOM_MINIFLOAT(f4e2m1, 2, 1, 1, LOOM_MF_SAT)
#undef LOOM_MINIFLOAT

/* ---- f8e8m0: a power of two ----
 * To e8m0: ONNX's default (round_mode "up", saturate): the exponent of |x|
 * (the sign is dropped), plus one when any mantissa bit is set, except at
 * the largest exponent; inf and NaN become NaN (0xff). */
static inline float loom_f8e8m0_to_f32(uint8_t c) {
  if (c == 0xff) return loom_bits_to_f32(0x7fc00000);
  return loom_bits_to_f32(c ? (uint32_t)c << 23 : 0x400000);
}

static inline uint8_t loom_f32_to_f8e8m0(float f) {
  uint32_t u = loom_f32_to_bits(f), e = u >> 23 & 0xff;
  if (e == 0xff) return 0xff;
  return (uint8_t)(e + ((u & 0x7fffff) && e != 0xfe));
}

/* ---- 4- and 2-bit integers (stored one per byte, sign-extended) ---- */

static inline int8_t loom_i64_to_i4(int64_t v) { return (int8_t)(((v & 15) ^ 8) - 8); }
static inline uint8_t loom_i64_to_u4(int64_t v) { return (uint8_t)(v & 15); }
static inline int8_t loom_i64_to_i2(int64_t v) { return (int8_t)(((v & 3) ^ 2) - 2); }
static inline uint8_t loom_i64_to_u2(int64_t v) { return (uint8_t)(v & 3); }

#endif
