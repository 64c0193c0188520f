/* Protobuf wire decoder and ModelProto decoding on hand-encoded bytes (no
 * Python needed): field forms, bounds errors with byte offsets, and
 * robustness against every truncation and many mutations of a valid model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "frontend/onnx/onnx.h"
#include "frontend/onnx/pb.h"

/* A minimal protobuf writer for building test inputs. */
typedef struct Buf {
  uint8_t data[4096];
  size_t len;
} Buf;

static void put_byte(Buf *b, uint8_t x) {
  assert_true(b->len < sizeof b->data);
  b->data[b->len++] = x;
}
static void put_varint(Buf *b, uint64_t v) {
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    put_byte(b, byte | (v ? 0x80 : 0));
  } while (v);
}
static void put_tag(Buf *b, int field, int wire) { put_varint(b, (uint64_t)field << 3 | (uint64_t)wire); }
static void put_int(Buf *b, int field, int64_t v) {
  put_tag(b, field, 0);
  put_varint(b, (uint64_t)v);
}
static void put_bytes(Buf *b, int field, const void *p, size_t n) {
  put_tag(b, field, 2);
  put_varint(b, n);
  for (size_t k = 0; k < n; k++) put_byte(b, ((const uint8_t *)p)[k]);
}
static void put_str(Buf *b, int field, const char *s) { put_bytes(b, field, s, strlen(s)); }
static void put_msg(Buf *b, int field, const Buf *m) { put_bytes(b, field, m->data, m->len); }

static void test_varints_and_packed(void **state) {
  (void)state;
  Buf b = {0};
  put_int(&b, 1, 300);         /* AC 02 */
  put_int(&b, 2, -1);          /* 10-byte varint */
  Buf packed = {0};
  put_varint(&packed, 1);
  put_varint(&packed, 150);
  put_varint(&packed, 0);
  put_msg(&b, 3, &packed);
  put_int(&b, 3, 7);           /* same field unpacked: appended */
  put_tag(&b, 4, 5);
  float f = 2.5f;
  uint8_t fb[4];
  memcpy(fb, &f, 4);
  for (int k = 0; k < 4; k++) put_byte(&b, fb[k]);
  assert_int_equal(b.data[1], 0xAC);
  assert_int_equal(b.data[2], 0x02);

  Arena *a = arena_new();
  LoomError err = {0};
  PbReader r = pb_reader_init(b.data, b.len, &err);
  PbField fld;
  PbI64List list = {0};
  PbF64List fl = {0};
  int seen = 0;
  while (pb_next(&r, &fld)) {
    seen++;
    if (fld.number == 1) assert_int_equal(fld.value, 300);
    if (fld.number == 2) assert_int_equal((int64_t)fld.value, -1);
    if (fld.number == 3) assert_true(pb_read_varints(&r, a, &fld, &list, "list"));
    if (fld.number == 4) assert_true(pb_read_floats(&r, a, &fld, &fl, "f"));
  }
  assert_false(r.failed);
  assert_int_equal(seen, 5);
  assert_int_equal(list.n, 4);
  int64_t expect[] = {1, 150, 0, 7};
  for (int k = 0; k < 4; k++) assert_int_equal(list.items[k], expect[k]);
  assert_int_equal(fl.n, 1);
  assert_true(fl.items[0] == 2.5);
  arena_free(a);
}

static void expect_decode_error(const uint8_t *data, size_t len, const char *needle) {
  LoomError err = {0};
  PbReader r = pb_reader_init(data, len, &err);
  PbField f;
  while (pb_next(&r, &f)) {
  }
  assert_true(r.failed);
  if (!strstr(err.msg, needle)) fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
}

static void test_wire_errors(void **state) {
  (void)state;
  const uint8_t truncated_varint[] = {0x08, 0x80, 0x80};
  expect_decode_error(truncated_varint, sizeof truncated_varint, "at byte 1: truncated varint");
  const uint8_t overlong[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  expect_decode_error(overlong, sizeof overlong, "varint longer than 10 bytes");
  const uint8_t len_past_end[] = {0x08, 0x01, 0x12, 0x05, 'a', 'b'};
  expect_decode_error(len_past_end, sizeof len_past_end, "at byte 2: field 2 claims 5 bytes but only 2 remain");
  const uint8_t group[] = {0x0b};
  expect_decode_error(group, sizeof group, "wire type 3");
  const uint8_t fixed_short[] = {0x0d, 1, 2};
  expect_decode_error(fixed_short, sizeof fixed_short, "truncated 4-byte fixed field");
  const uint8_t field_zero[] = {0x00, 0x01};
  expect_decode_error(field_zero, sizeof field_zero, "invalid field number 0");
}

/* Model: opset 13, graph "g", input x: f32[2, 3], initializer b: i64[2]
 * (int64_data packed) and s: f32[2] (raw_data), Relu(x) -> y. */
static void build_model(Buf *model, bool add_bad_raw) {
  Buf dim1 = {0}, dim2 = {0}, shape = {0}, tt = {0}, type = {0}, vi = {0};
  put_int(&dim1, 1, 2);
  put_int(&dim2, 1, 3);
  put_msg(&shape, 1, &dim1);
  put_msg(&shape, 1, &dim2);
  put_int(&tt, 1, 1); /* FLOAT */
  put_msg(&tt, 2, &shape);
  put_msg(&type, 1, &tt);
  put_str(&vi, 1, "x");
  put_msg(&vi, 2, &type);

  Buf node = {0};
  put_str(&node, 1, "x");
  put_str(&node, 2, "y");
  put_str(&node, 3, "relu0");
  put_str(&node, 4, "Relu");

  Buf init = {0}, ints = {0};
  put_int(&init, 1, 2);
  put_int(&init, 2, 7); /* INT64 */
  put_str(&init, 8, "b");
  put_varint(&ints, 5);
  put_varint(&ints, (uint64_t)-6);
  put_msg(&init, 7, &ints);

  Buf init2 = {0};
  float raw[2] = {1.5f, -2.0f};
  put_int(&init2, 1, 2);
  put_int(&init2, 2, 1);
  put_str(&init2, 8, "s");
  put_bytes(&init2, 9, raw, add_bad_raw ? 7 : 8);

  Buf out = {0};
  put_str(&out, 1, "y");

  Buf graph = {0};
  put_msg(&graph, 1, &node);
  put_str(&graph, 2, "g");
  put_msg(&graph, 5, &init);
  put_msg(&graph, 5, &init2);
  put_msg(&graph, 11, &vi);
  put_msg(&graph, 12, &out);

  Buf opset = {0};
  put_str(&opset, 1, "");
  put_int(&opset, 2, 13);

  put_int(model, 1, 8);
  put_str(model, 2, "hand");
  put_msg(model, 7, &graph);
  put_msg(model, 8, &opset);
}

static void test_hand_model(void **state) {
  (void)state;
  Buf m = {0};
  build_model(&m, false);
  LoomError err = {0};
  Graph *g = onnx_import_bytes(m.data, m.len, NULL, &err);
  if (!g) fail_msg("%s", err.msg);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  StrBuf sb;
  sb_init(&sb);
  graph_print(g, &sb);
  assert_string_equal(sb_cstr(&sb), "graph g(%x: f32[2, 3]) {\n"
                                    "  %y: f32[2, 3] = Relu(%x)  # \"relu0\"\n"
                                    "  return %y\n"
                                    "}\n");
  sb_free(&sb);
  /* The unused initializers were still decoded as constants. */
  const GraphTensor *b = NULL, *s = NULL;
  for (int v = 0; v < g->nvalues; v++) {
    if (!strcmp(g->values[v].name, "b")) b = g->values[v].constant;
    if (!strcmp(g->values[v].name, "s")) s = g->values[v].constant;
  }
  assert_non_null(b);
  assert_non_null(s);
  assert_int_equal(graph_tensor_get_i64(b, 0), 5);
  assert_int_equal(graph_tensor_get_i64(b, 1), -6);
  assert_true(graph_tensor_get_f64(s, 0) == 1.5 && graph_tensor_get_f64(s, 1) == -2.0);
  graph_free(g);

  Buf bad = {0};
  build_model(&bad, true);
  g = onnx_import_bytes(bad.data, bad.len, NULL, &err);
  assert_null(g);
  assert_string_equal(err.msg, "initializer \"s\": raw_data has 7 bytes, expected 8 for 2 elements of FLOAT");
}

/* Every prefix and many byte mutations of a valid model must give either a
 * graph or an error, never a crash (the ASan build checks memory safety). */
static void test_truncations_and_mutations(void **state) {
  (void)state;
  Buf m = {0};
  build_model(&m, false);
  int ok = 0, failed = 0;
  for (size_t len = 0; len < m.len; len++) {
    LoomError err = {0};
    Graph *g = onnx_import_bytes(m.data, len, NULL, &err);
    if (g) ok++, graph_free(g);
    else failed++, assert_true(err.msg[0] != 0);
  }
  assert_true(failed > 0);
  uint64_t seed = 7;
  for (int trial = 0; trial < 3000; trial++) {
    Buf c = m;
    int flips = 1 + trial % 4;
    for (int k = 0; k < flips; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      size_t pos = (size_t)(seed >> 33) % c.len;
      c.data[pos] = (uint8_t)(seed >> 20);
    }
    LoomError err = {0};
    Graph *g = onnx_import_bytes(c.data, c.len, NULL, &err);
    if (g) {
      /* Whatever imported must survive the passes too. */
      loom_status st = graph_pass_fold_constants(g, &err);
      if (!st) st = graph_pass_dce(g, &err);
      StrBuf sb;
      sb_init(&sb);
      graph_print(g, &sb);
      sb_free(&sb);
      graph_free(g);
    } else {
      assert_true(err.msg[0] != 0);
    }
  }
  (void)ok;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_varints_and_packed),
      cmocka_unit_test(test_wire_errors),
      cmocka_unit_test(test_hand_model),
      cmocka_unit_test(test_truncations_and_mutations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
