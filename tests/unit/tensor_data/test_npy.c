/* .npy reading and writing: round trips for every dtype, files laid out as
 * numpy writes them (v1.0, v2.0, scalar, empty), and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/dl_dtype.h"
#include "tensor_data/npy.h"

static void assert_contains(const char *msg, const char *part) {
  if (!strstr(msg, part)) fail_msg("expected \"%s\" in the message: %s", part, msg);
}

/* An image the way numpy lays it out: magic, version, header padded with
 * spaces to a 64-byte boundary, newline, data. */
static uint8_t *npy_image(int major, const char *dict, const void *data, size_t nbytes, size_t *len) {
  size_t prefix = major == 1 ? 10 : 12;
  size_t hl = (prefix + strlen(dict) + 1 + 63) / 64 * 64 - prefix;
  *len = prefix + hl + nbytes;
  uint8_t *b = malloc(*len);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (uint8_t)major;
  b[7] = 0;
  if (major == 1) {
    b[8] = (uint8_t)hl;
    b[9] = (uint8_t)(hl >> 8);
  } else {
    for (int i = 0; i < 4; i++) b[8 + i] = (uint8_t)(hl >> (8 * i));
  }
  memset(b + prefix, ' ', hl);
  memcpy(b + prefix, dict, strlen(dict));
  b[prefix + hl - 1] = '\n';
  if (nbytes) memcpy(b + prefix + hl, data, nbytes);
  return b;
}

static void test_parse_numpy_layouts(void **state) {
  (void)state;
  float f[6] = {1, 2, 3, 4, 5, 6};
  size_t len;
  NpyArray a;
  LoomError err = {0};
  uint8_t *b = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f, sizeof f, &len);
  assert_int_equal(npy_parse(b, len, "a.npy", &a, &err), LOOM_OK);
  assert_int_equal(a.ndim, 2);
  assert_int_equal(a.shape[0], 2);
  assert_int_equal(a.shape[1], 3);
  assert_int_equal(a.dtype.code, kDLFloat);
  assert_int_equal(a.dtype.bits, 32);
  assert_int_equal(a.nbytes, sizeof f);
  assert_int_equal((uintptr_t)a.data % 64, 0);
  assert_memory_equal(a.data, f, sizeof f);
  npy_free(&a);
  free(b);

  int64_t v[3] = {-1, 5, 1LL << 40};
  b = npy_image(2, "{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (3,)}", v, sizeof v, &len);
  assert_int_equal(npy_parse(b, len, "b.npy", &a, &err), LOOM_OK);
  assert_int_equal(a.ndim, 1);
  assert_int_equal(a.dtype.code, kDLInt);
  assert_memory_equal(a.data, v, sizeof v);
  npy_free(&a);
  free(b);

  double s = 2.5;
  b = npy_image(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &s, sizeof s, &len);
  assert_int_equal(npy_parse(b, len, "s.npy", &a, &err), LOOM_OK);
  assert_int_equal(a.ndim, 0);
  assert_true(*(double *)a.data == 2.5);
  npy_free(&a);
  free(b);

  b = npy_image(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (0, 4), }", NULL, 0, &len);
  assert_int_equal(npy_parse(b, len, "e.npy", &a, &err), LOOM_OK);
  assert_int_equal(a.dtype.code, DL_DTYPE_BOOL_CODE);
  assert_int_equal(a.nbytes, 0);
  npy_free(&a);
  free(b);
}

static void test_refusals(void **state) {
  (void)state;
  float f[8] = {0};
  size_t len;
  NpyArray a;
  LoomError err = {0};
  static const struct {
    const char *dict;
    size_t nbytes;
    loom_status st;
    const char *expect;
  } cases[] = {
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, LOOM_ERR_UNSUPPORTED, "Fortran"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24, LOOM_ERR_UNSUPPORTED, "big-endian"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24, LOOM_ERR_UNSUPPORTED, "'<c8'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", 24, LOOM_ERR_UNSUPPORTED, "structured"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20, LOOM_ERR_PARSE, "20 data bytes"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28, LOOM_ERR_PARSE, "28 data bytes"},
      {"{'descr': '<f4', 'fortran_order': False, }", 24, LOOM_ERR_PARSE, "lacks 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 24, LOOM_ERR_PARSE, "'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", 24, LOOM_ERR_PARSE,
       "data bytes"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (6,), }", 24, LOOM_ERR_PARSE, "fortran_order"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}", 24, LOOM_ERR_PARSE, "'extra'"},
      {"['descr']", 24, LOOM_ERR_PARSE, "not a dict"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t *b = npy_image(1, cases[i].dict, f, cases[i].nbytes, &len);
    memset(&err, 0, sizeof err);
    loom_status st = npy_parse(b, len, "t.npy", &a, &err);
    if (st != cases[i].st) fail_msg("case %zu: status %d (%s)", i, (int)st, err.msg);
    assert_contains(err.msg, cases[i].expect);
    assert_contains(err.msg, "t.npy");
    assert_null(a.data);
    free(b);
  }
  assert_int_equal(npy_parse("GARBAGE!!!!!", 12, "g.npy", &a, &err), LOOM_ERR_PARSE);
  assert_contains(err.msg, "not a .npy file");
  uint8_t *b = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", f, 24, &len);
  b[6] = 4;
  assert_int_equal(npy_parse(b, len, "v.npy", &a, &err), LOOM_ERR_UNSUPPORTED);
  assert_contains(err.msg, "version 4.0");
  b[6] = 1;
  /* every truncation is refused without reading past the end */
  for (size_t n = 0; n < len; n++) {
    uint8_t *copy = malloc(n + 1);
    memcpy(copy, b, n);
    assert_int_not_equal(npy_parse(copy, n, "cut.npy", &a, &err), LOOM_OK);
    free(copy);
  }
  free(b);
  assert_int_equal(npy_read("/nonexistent/x.npy", &a, &err), LOOM_ERR_IO);
  assert_contains(err.msg, "/nonexistent/x.npy");
}

static void test_write_read_every_dtype(void **state) {
  (void)state;
  char dir[] = "/tmp/loom-test-npy-XXXXXX";
  assert_non_null(mkdtemp(dir));
  static const char *const names[] = {"float32", "float64", "float16", "int8",   "int16",  "int32",
                                      "int64",   "uint8",   "uint16",  "uint32", "uint64", "bool"};
  uint8_t data[7 * 5 * 8];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 37 + 11);
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    DLTensor t = {0};
    int64_t shape[3] = {7, 1, 5};
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = 3;
    t.shape = shape;
    assert_true(dl_dtype_parse(names[k], &t.dtype));
    if (!strcmp(names[k], "bool")) {
      for (size_t i = 0; i < 35; i++) data[i] = (uint8_t)(i % 3 == 0);
    }
    char path[128];
    snprintf(path, sizeof path, "%s/%s.npy", dir, names[k]);
    LoomError err = {0};
    assert_int_equal(npy_write(path, &t, &err), LOOM_OK);
    NpyArray a;
    assert_int_equal(npy_read(path, &a, &err), LOOM_OK);
    assert_true(dl_dtype_equal(a.dtype, t.dtype));
    assert_int_equal(a.ndim, 3);
    assert_int_equal(a.shape[0], 7);
    assert_int_equal(a.shape[2], 5);
    assert_int_equal(a.nbytes, 35 * dl_dtype_bytes(t.dtype));
    assert_memory_equal(a.data, data, a.nbytes);
    DLTensor view = npy_as_tensor(&a);
    assert_int_equal(view.ndim, 3);
    npy_free(&a);
    /* the data starts 64-byte aligned in the file, as numpy does */
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    assert_int_equal((ftell(f) - (long)(35 * dl_dtype_bytes(t.dtype))) % 64, 0);
    fclose(f);
    unlink(path);
  }
  /* unwritable destination: error, nothing written */
  DLTensor t = {0};
  int64_t shape[1] = {2};
  float two[2] = {1, 2};
  t.data = two;
  t.device.device_type = kDLCPU;
  t.ndim = 1;
  t.shape = shape;
  t.dtype = (DLDataType){kDLFloat, 32, 1};
  LoomError err = {0};
  char path[128];
  snprintf(path, sizeof path, "%s/missing/y.npy", dir);
  assert_int_equal(npy_write(path, &t, &err), LOOM_ERR_IO);
  assert_contains(err.msg, "missing/y.npy");
  int64_t strides[1] = {2};
  t.strides = strides;
  snprintf(path, sizeof path, "%s/y.npy", dir);
  assert_int_equal(npy_write(path, &t, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(access(path, F_OK), -1);
  assert_int_equal(rmdir(dir), 0); /* empty: no temporaries left behind */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_numpy_layouts),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_write_read_every_dtype),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
