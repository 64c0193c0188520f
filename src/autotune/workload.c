/* The workload key: FNV-1a-128 over the function's anonymous text
 * (workload.h says why the text and why this hash). */
#include "autotune/workload.h"

#include "support/alloc.h"
#include "tir/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a-128's parameters (http://www.isthe.com/chongo/tech/comp/fnv/):
 * offset basis 0x6c62272e07bb014262b821756295c58d, prime 2^88 + 0x13b. */
#define FNV128_BASIS_HI 0x6c62272e07bb0142ULL
#define FNV128_BASIS_LO 0x62b821756295c58dULL
#define FNV128_PRIME_LOW 0x13bULL

Fnv128 autotune_fnv128_init(void) { return (Fnv128){FNV128_BASIS_HI, FNV128_BASIS_LO}; }

/* h *= 2^88 + 0x13b (mod 2^128), in 64-bit halves: h * 0x13b, where the
 * low half's product carries into the high half, plus h << 88, which only
 * the low half reaches (as lo << 24 in the high half). */
static void fnv128_mul(Fnv128 *h) {
  uint64_t lo = h->lo, hi = h->hi;
  uint64_t lo_lo = lo & 0xffffffffULL, lo_hi = lo >> 32;
  uint64_t carry = (lo_hi * FNV128_PRIME_LOW + ((lo_lo * FNV128_PRIME_LOW) >> 32)) >> 32;
  h->lo = lo * FNV128_PRIME_LOW;
  h->hi = hi * FNV128_PRIME_LOW + carry + (lo << 24);
}

void autotune_fnv128_update(Fnv128 *state, const void *bytes, size_t n) {
  const unsigned char *p = bytes;
  for (size_t i = 0; i < n; i++) {
    state->lo ^= p[i];
    fnv128_mul(state);
  }
}

void autotune_workload_key(const PrimFunc *f, char out[AUTOTUNE_WORKLOAD_KEY_LEN + 1]) {
  char *text = tir_print_func_anonymous(f);
  Fnv128 h = autotune_fnv128_init();
  autotune_fnv128_update(&h, text, strlen(text));
  loom_free(text);
  snprintf(out, AUTOTUNE_WORKLOAD_KEY_LEN + 1, "%016llx%016llx", (unsigned long long)h.hi,
           (unsigned long long)h.lo);
}
