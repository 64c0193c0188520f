/* DLPack dtypes by name, as the artifact metadata and .npy files spell them.
 *
 * The runtime speaks DLDataType (it has no compiler types). Names follow
 * numpy: "float32", "int64", "uint8", "bool", plus "bfloat16" and ml_dtypes'
 * "float8_e4m3fn", "int4"... (DLPack 1.1 codes 10-17). bool is
 * DLPack's kDLBool (code 6, 8 bits): the installed dlpack.h predates the
 * enum member, so its value is spelled here. Only scalar (lanes == 1)
 * dtypes cross the runtime boundary. */
#ifndef LOOM_RUNTIME_DL_DTYPE_H
#define LOOM_RUNTIME_DL_DTYPE_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { DL_DTYPE_BOOL_CODE = 6 };

/* "float32" etc.; NULL for a dtype the runtime does not handle. */
const char *dl_dtype_name(DLDataType t);
/* Parses a name from dl_dtype_name; false when unknown. */
bool dl_dtype_parse(const char *name, DLDataType *out);
/* Bytes per element in memory (4- and 2-bit types take a whole byte); 0
 * for an unsupported dtype. */
size_t dl_dtype_bytes(DLDataType t);
bool dl_dtype_equal(DLDataType a, DLDataType b);

/* Element count of a shape; false when a dimension is negative or the
 * product (times elem_bytes) overflows `limit`. ndim 0 is a scalar (1). */
bool dl_shape_bytes(const int64_t *shape, int32_t ndim, size_t elem_bytes, uint64_t limit, uint64_t *bytes);

/* "[1, 3, 224, 224]" into buf (truncated to len). Returns buf. */
char *dl_shape_str(const int64_t *shape, int32_t ndim, char *buf, size_t len);

#endif
