/* DLTensors for a PrimFunc's parameters, with seeded random contents. */
#include "driver/driver.h"

#include "support/alloc.h"
#include "tensor_data/tensor_fill.h"

#include <stdlib.h>
#include <string.h>

/* The parameter as the caller sees it: N-d even after flattening. */
static const Buffer *param_buffer(const PrimFunc *f, int i) {
  return f->orig_params ? f->orig_params[i] : f->params[i];
}

loom_status driver_tensors_alloc(const PrimFunc *f, uint64_t seed, DriverTensors *out,
                                 LoomError *err) {
  if (!f || !out) return err_set(err, LOOM_ERR_INVALID_ARG, "driver_tensors_alloc: NULL argument");
  memset(out, 0, sizeof *out);
  int n = f->n_params;
  out->n = n;
  out->tensors = loom_calloc((size_t)(n > 0 ? n : 1), sizeof *out->tensors);
  out->ptrs = loom_calloc((size_t)(n > 0 ? n : 1), sizeof *out->ptrs);
  out->bytes = loom_calloc((size_t)(n > 0 ? n : 1), sizeof *out->bytes);
  if (!out->tensors || !out->ptrs || !out->bytes) {
    driver_tensors_free(out);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "driver_tensors_alloc: out of memory");
  }
  for (int i = 0; i < n; i++) {
    const Buffer *b = param_buffer(f, i);
    DLTensor *t = &out->tensors[i];
    out->ptrs[i] = t;
    if (b->dtype.lanes != 1 || b->dtype.bits % 8 != 0 || b->dtype.code == DT_HANDLE) {
      char buf[16];
      driver_tensors_free(out);
      return err_set(err, LOOM_ERR_INVALID_ARG,
                     "driver_tensors_alloc: parameter \"%s\" of \"%s\" has dtype %s, expected a "
                     "scalar type of whole bytes",
                     b->name, f->name, dtype_str(b->dtype, buf));
    }
    int64_t *shape = loom_calloc((size_t)(b->ndim > 0 ? b->ndim : 1), sizeof *shape);
    t->shape = shape;
    int64_t count = 1;
    for (int d = 0; d < b->ndim; d++) {
      const Expr *e = b->shape[d];
      if (!shape || e->kind != EXPR_INT || e->int_value < 0) {
        driver_tensors_free(out);
        return err_set(err, LOOM_ERR_INVALID_ARG,
                       "driver_tensors_alloc: dimension %d of parameter \"%s\" of \"%s\" is not a "
                       "non-negative constant",
                       d, b->name, f->name);
      }
      shape[d] = e->int_value;
      count *= e->int_value;
    }
    size_t bytes = (size_t)count * (size_t)(b->dtype.bits / 8);
    size_t padded = (bytes + 63) / 64 * 64;
    t->data = loom_aligned_alloc(64, padded ? padded : 64);
    if (!t->data) {
      driver_tensors_free(out);
      return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "driver_tensors_alloc: out of memory for \"%s\"", b->name);
    }
    memset(t->data, 0, padded ? padded : 64);
    out->bytes[i] = bytes;
    t->device.device_type = kDLCPU;
    t->ndim = b->ndim;
    t->dtype.code = (uint8_t)b->dtype.code;
    t->dtype.bits = (uint8_t)b->dtype.bits;
    t->dtype.lanes = 1;
  }
  driver_tensors_randomize(out, seed);
  return LOOM_OK;
}

void driver_tensors_randomize(DriverTensors *t, uint64_t seed) {
  for (int i = 0; i < t->n; i++) tensor_fill_random(t->tensors[i].data, t->tensors[i].dtype, t->bytes[i], seed, i);
}

void driver_tensors_copy(DriverTensors *dst, const DriverTensors *src) {
  for (int i = 0; i < dst->n && i < src->n; i++) {
    size_t bytes = dst->bytes[i] < src->bytes[i] ? dst->bytes[i] : src->bytes[i];
    if (bytes) memcpy(dst->tensors[i].data, src->tensors[i].data, bytes);
  }
}

void driver_tensors_data(const DriverTensors *t, void **out) {
  for (int i = 0; i < t->n; i++) out[i] = t->tensors[i].data;
}

void driver_tensors_free(DriverTensors *t) {
  if (!t) return;
  for (int i = 0; t->tensors && i < t->n; i++) {
    loom_free(t->tensors[i].data);
    loom_free(t->tensors[i].shape);
  }
  loom_free(t->tensors);
  loom_free(t->ptrs);
  loom_free(t->bytes);
  memset(t, 0, sizeof *t);
}
