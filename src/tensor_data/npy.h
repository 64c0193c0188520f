/* NumPy .npy files (format versions 1.0, 2.0 and 3.0): the tensor files of
 * `loom run`. Little-endian data in C order only; Fortran order and
 * big-endian data are refused with a message saying so (numpy can convert:
 * np.ascontiguousarray(a.astype('<f4'))). */
#ifndef LOOM_TENSOR_DATA_NPY_H
#define LOOM_TENSOR_DATA_NPY_H

#include "support/error.h"

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

enum { NPY_MAX_DIMS = 32 };

typedef struct NpyArray {
  DLDataType dtype;
  int32_t ndim;
  int64_t shape[NPY_MAX_DIMS];
  void *data; /* 64-byte aligned, owned; free with npy_free */
  size_t nbytes;
} NpyArray;

/* Parses a whole .npy image. `what` names it in messages (a file name).
 * LOOM_ERR_PARSE for a malformed header or a size mismatch,
 * LOOM_ERR_UNSUPPORTED for Fortran order, big-endian or an unknown dtype. */
loom_status npy_parse(const void *buf, size_t len, const char *what, NpyArray *out, LoomError *err);
/* Reads and parses a file; LOOM_ERR_IO naming it when unreadable. */
loom_status npy_read(const char *path, NpyArray *out, LoomError *err);
void npy_free(NpyArray *a);
/* A DLTensor view of the array (valid while the array lives). */
DLTensor npy_as_tensor(NpyArray *a);

/* Writes a compact CPU tensor as a version 1.0 .npy (2.0 when the header
 * needs it), atomically. LOOM_ERR_INVALID_ARG for strided or unsupported
 * tensors, LOOM_ERR_IO naming the path. */
loom_status npy_write(const char *path, const DLTensor *t, LoomError *err);

#endif
