#include "tensor_data/tensor_fill.h"

#include "runtime/dl_dtype.h"

#include <string.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void tensor_fill_random(void *data, DLDataType dtype, size_t bytes, uint64_t seed, int index) {
  uint64_t rng = seed * 0x100000001b3ULL + (uint64_t)index * 0x9e3779b97f4a7c15ULL;
  size_t width = dtype.bits / 8, count = width ? bytes / width : 0;
  for (size_t k = 0; k < count; k++) {
    uint64_t r = splitmix64(&rng);
    double u = (double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0; /* [-1, 1) */
    int64_t small = (int64_t)(r % 9);                                      /* [0, 8] */
    void *p = (char *)data + k * width;
    switch (dtype.code) {
      case kDLFloat:
        if (width == 4) *(float *)p = (float)u;
        else if (width == 8) *(double *)p = u;
        else memset(p, 0, width); /* f16: zero is exact in every encoding */
        break;
      case kDLInt:
        small -= 4;
        /* fallthrough */
      default:
        if (dtype.code == DL_DTYPE_BOOL_CODE) small &= 1;
        switch (width) {
          case 1: *(int8_t *)p = (int8_t)small; break;
          case 2: *(int16_t *)p = (int16_t)small; break;
          case 4: *(int32_t *)p = (int32_t)small; break;
          default: *(int64_t *)p = small; break;
        }
    }
  }
}
