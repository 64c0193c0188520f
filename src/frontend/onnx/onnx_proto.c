/* ModelProto decoding over the wire reader. One function per message; each
 * loops over fields, keeps the ones Loom reads and skips the rest, so newer
 * onnx.proto fields never break an old decoder. */
#include "frontend/onnx/onnx_proto.h"

#include <string.h>

/* Appends to a (pointer, count) pair in the arena, doubling at powers of two. */
#define GROW_PUSH(a, arr, n, T)                                          \
  do {                                                                   \
    if (((n) & ((n)-1)) == 0) {                                          \
      T *p_ = arena_alloc((a), sizeof(T) * (size_t)((n) ? (n)*2 : 4));   \
      if (n) memcpy(p_, (arr), sizeof(T) * (size_t)(n));                 \
      (arr) = p_;                                                        \
    }                                                                    \
    (n)++;                                                               \
  } while (0)

static bool decode_graph(PbReader *r, Arena *a, OnnxGraph *g);

static bool decode_external_entry(PbReader *r, Arena *a, const PbField *f, OnnxTensor *t) {
  PbReader sub = pb_reader_sub(r, f);
  const char *key = NULL, *value = NULL;
  PbField e;
  while (pb_next(&sub, &e)) {
    if (e.number == 1) key = pb_read_string(&sub, a, &e, "external_data.key");
    else if (e.number == 2) value = pb_read_string(&sub, a, &e, "external_data.value");
  }
  if (sub.failed) return r->failed = true, false;
  if (!key || !value) return true;
  if (!strcmp(key, "location")) {
    t->ext_location = value;
  } else if (!strcmp(key, "offset") || !strcmp(key, "length")) {
    char *endp;
    long long v = strtoll(value, &endp, 10);
    if (*value == 0 || *endp || v < 0) return pb_fail(r, e.offset, "external_data %s \"%s\" is not a non-negative integer", key, value);
    if (!strcmp(key, "offset")) t->ext_offset = v;
    else t->ext_length = v;
  }
  return true;
}

static bool decode_tensor(PbReader *r, Arena *a, const PbField *outer, OnnxTensor *t) {
  memset(t, 0, sizeof *t);
  t->ext_length = -1;
  t->offset = outer->offset;
  PbReader sub = pb_reader_sub(r, outer);
  PbField f;
  PbI64List dims = {0};
  while (pb_next(&sub, &f)) {
    switch (f.number) {
    case 1: pb_read_varints(&sub, a, &f, &dims, "TensorProto.dims"); break;
    case 2: if (pb_expect(&sub, &f, PB_VARINT, "TensorProto.data_type")) t->data_type = (int)f.value; break;
    case 4: pb_read_floats(&sub, a, &f, &t->float_data, "TensorProto.float_data"); break;
    case 5: pb_read_varints(&sub, a, &f, &t->int32_data, "TensorProto.int32_data"); break;
    case 7: pb_read_varints(&sub, a, &f, &t->int64_data, "TensorProto.int64_data"); break;
    case 8: t->name = pb_read_string(&sub, a, &f, "TensorProto.name"); break;
    case 9:
      if (pb_expect(&sub, &f, PB_LEN, "TensorProto.raw_data")) {
        t->raw_data.data = f.data;
        t->raw_data.len = f.len;
        t->has_raw_data = true;
      }
      break;
    case 10: pb_read_doubles(&sub, a, &f, &t->double_data, "TensorProto.double_data"); break;
    case 11: pb_read_varints(&sub, a, &f, &t->uint64_data, "TensorProto.uint64_data"); break;
    case 13: if (pb_expect(&sub, &f, PB_LEN, "TensorProto.external_data")) decode_external_entry(&sub, a, &f, t); break;
    case 14: if (pb_expect(&sub, &f, PB_VARINT, "TensorProto.data_location")) t->data_location = (int)f.value; break;
    default: break;
    }
  }
  t->dims = dims.items;
  t->ndims = dims.n;
  if (sub.failed) r->failed = true;
  return !r->failed;
}

static bool decode_value_info(PbReader *r, Arena *a, const PbField *outer, OnnxValueInfo *v) {
  memset(v, 0, sizeof *v);
  PbReader sub = pb_reader_sub(r, outer);
  PbField f;
  while (pb_next(&sub, &f)) {
    if (f.number == 1) {
      v->name = pb_read_string(&sub, a, &f, "ValueInfoProto.name");
    } else if (f.number == 2 && pb_expect(&sub, &f, PB_LEN, "ValueInfoProto.type")) {
      PbReader ty = pb_reader_sub(&sub, &f);
      PbField tf;
      while (pb_next(&ty, &tf)) {
        if (tf.number != 1 || !pb_expect(&ty, &tf, PB_LEN, "TypeProto.tensor_type")) continue;
        v->is_tensor = true;
        PbReader tt = pb_reader_sub(&ty, &tf);
        PbField ttf;
        while (pb_next(&tt, &ttf)) {
          if (ttf.number == 1 && pb_expect(&tt, &ttf, PB_VARINT, "TypeProto.Tensor.elem_type")) {
            v->elem_type = (int)ttf.value;
          } else if (ttf.number == 2 && pb_expect(&tt, &ttf, PB_LEN, "TypeProto.Tensor.shape")) {
            v->has_shape = true;
            PbReader sh = pb_reader_sub(&tt, &ttf);
            PbField df;
            while (pb_next(&sh, &df)) {
              if (df.number != 1 || !pb_expect(&sh, &df, PB_LEN, "TensorShapeProto.dim")) continue;
              OnnxDim d = {-1, NULL};
              PbReader dr = pb_reader_sub(&sh, &df);
              PbField vf;
              while (pb_next(&dr, &vf)) {
                if (vf.number == 1 && pb_expect(&dr, &vf, PB_VARINT, "Dimension.dim_value")) d.value = (int64_t)vf.value;
                else if (vf.number == 2) d.param = pb_read_string(&dr, a, &vf, "Dimension.dim_param");
              }
              if (dr.failed) sh.failed = true;
              GROW_PUSH(a, v->dims, v->ndims, OnnxDim);
              v->dims[v->ndims - 1] = d;
            }
            if (sh.failed) tt.failed = true;
          }
        }
        if (tt.failed) ty.failed = true;
      }
      if (ty.failed) sub.failed = true;
    }
  }
  if (sub.failed) r->failed = true;
  return !r->failed;
}

static bool decode_attr(PbReader *r, Arena *a, const PbField *outer, OnnxAttr *at) {
  memset(at, 0, sizeof *at);
  PbReader sub = pb_reader_sub(r, outer);
  PbField f;
  while (pb_next(&sub, &f)) {
    switch (f.number) {
    case 1: at->name = pb_read_string(&sub, a, &f, "AttributeProto.name"); break;
    case 20: if (pb_expect(&sub, &f, PB_VARINT, "AttributeProto.type")) at->type = (int)f.value; break;
    case 2:
      if (pb_expect(&sub, &f, PB_FIXED32, "AttributeProto.f")) {
        uint32_t b = (uint32_t)f.value;
        float x;
        memcpy(&x, &b, 4);
        at->f = x;
        at->has_f = true;
      }
      break;
    case 3:
      if (pb_expect(&sub, &f, PB_VARINT, "AttributeProto.i")) {
        at->i = (int64_t)f.value;
        at->has_i = true;
      }
      break;
    case 4:
      if (pb_expect(&sub, &f, PB_LEN, "AttributeProto.s")) {
        at->s.data = f.data;
        at->s.len = f.len;
        at->has_s = true;
      }
      break;
    case 5:
      if (pb_expect(&sub, &f, PB_LEN, "AttributeProto.t")) {
        at->t = ARENA_NEW(a, OnnxTensor);
        decode_tensor(&sub, a, &f, at->t);
      }
      break;
    case 6:
      if (pb_expect(&sub, &f, PB_LEN, "AttributeProto.g")) {
        at->g = ARENA_NEW(a, OnnxGraph);
        PbReader gr = pb_reader_sub(&sub, &f);
        if (!decode_graph(&gr, a, at->g)) sub.failed = true;
      }
      break;
    case 7: pb_read_floats(&sub, a, &f, &at->floats, "AttributeProto.floats"); break;
    case 8: pb_read_varints(&sub, a, &f, &at->ints, "AttributeProto.ints"); break;
    case 9:
      if (pb_expect(&sub, &f, PB_LEN, "AttributeProto.strings")) {
        GROW_PUSH(a, at->strings, at->nstrings, OnnxBytes);
        at->strings[at->nstrings - 1].data = f.data;
        at->strings[at->nstrings - 1].len = f.len;
      }
      break;
    case 10: at->ntensors++; break;
    case 11: at->ngraphs++; break;
    default: break;
    }
  }
  if (sub.failed) r->failed = true;
  return !r->failed;
}

static bool decode_node(PbReader *r, Arena *a, const PbField *outer, OnnxNode *n) {
  memset(n, 0, sizeof *n);
  PbReader sub = pb_reader_sub(r, outer);
  PbField f;
  while (pb_next(&sub, &f)) {
    switch (f.number) {
    case 1:
      GROW_PUSH(a, n->inputs, n->ninputs, const char *);
      n->inputs[n->ninputs - 1] = pb_read_string(&sub, a, &f, "NodeProto.input");
      break;
    case 2:
      GROW_PUSH(a, n->outputs, n->noutputs, const char *);
      n->outputs[n->noutputs - 1] = pb_read_string(&sub, a, &f, "NodeProto.output");
      break;
    case 3: n->name = pb_read_string(&sub, a, &f, "NodeProto.name"); break;
    case 4: n->op_type = pb_read_string(&sub, a, &f, "NodeProto.op_type"); break;
    case 7: n->domain = pb_read_string(&sub, a, &f, "NodeProto.domain"); break;
    case 5:
      if (pb_expect(&sub, &f, PB_LEN, "NodeProto.attribute")) {
        GROW_PUSH(a, n->attrs, n->nattrs, OnnxAttr);
        decode_attr(&sub, a, &f, &n->attrs[n->nattrs - 1]);
      }
      break;
    default: break;
    }
  }
  if (sub.failed) r->failed = true;
  if (!n->name) n->name = "";
  if (!n->op_type) n->op_type = "";
  if (!n->domain) n->domain = "";
  return !r->failed;
}

static bool decode_graph(PbReader *r, Arena *a, OnnxGraph *g) {
  memset(g, 0, sizeof *g);
  if (r->failed) return false;
  PbField f;
  while (pb_next(r, &f)) {
    switch (f.number) {
    case 1:
      if (pb_expect(r, &f, PB_LEN, "GraphProto.node")) {
        GROW_PUSH(a, g->nodes, g->nnodes, OnnxNode);
        decode_node(r, a, &f, &g->nodes[g->nnodes - 1]);
      }
      break;
    case 2: g->name = pb_read_string(r, a, &f, "GraphProto.name"); break;
    case 5:
      if (pb_expect(r, &f, PB_LEN, "GraphProto.initializer")) {
        GROW_PUSH(a, g->initializers, g->ninitializers, OnnxTensor);
        decode_tensor(r, a, &f, &g->initializers[g->ninitializers - 1]);
      }
      break;
    case 11:
    case 12:
    case 13:
      if (pb_expect(r, &f, PB_LEN, "GraphProto.input/output/value_info")) {
        OnnxValueInfo **arr = f.number == 11 ? &g->inputs : f.number == 12 ? &g->outputs : &g->value_infos;
        int *n = f.number == 11 ? &g->ninputs : f.number == 12 ? &g->noutputs : &g->nvalue_infos;
        GROW_PUSH(a, *arr, *n, OnnxValueInfo);
        decode_value_info(r, a, &f, &(*arr)[*n - 1]);
      }
      break;
    case 15: g->nsparse_initializers++; break;
    default: break;
    }
  }
  if (!g->name) g->name = "";
  return !r->failed;
}

OnnxModel *onnx_model_decode(Arena *a, const uint8_t *data, size_t size, LoomError *err) {
  PbReader r = pb_reader_init(data, size, err);
  OnnxModel *m = ARENA_NEW(a, OnnxModel);
  PbField f;
  while (pb_next(&r, &f)) {
    switch (f.number) {
    case 1: if (pb_expect(&r, &f, PB_VARINT, "ModelProto.ir_version")) m->ir_version = (int64_t)f.value; break;
    case 2: m->producer_name = pb_read_string(&r, a, &f, "ModelProto.producer_name"); break;
    case 7:
      if (pb_expect(&r, &f, PB_LEN, "ModelProto.graph")) {
        m->graph = ARENA_NEW(a, OnnxGraph);
        PbReader gr = pb_reader_sub(&r, &f);
        if (!decode_graph(&gr, a, m->graph)) r.failed = true;
      }
      break;
    case 8:
      if (pb_expect(&r, &f, PB_LEN, "ModelProto.opset_import")) {
        OnnxOpset op = {"", 0};
        PbReader sub = pb_reader_sub(&r, &f);
        PbField of;
        while (pb_next(&sub, &of)) {
          if (of.number == 1) op.domain = pb_read_string(&sub, a, &of, "OperatorSetIdProto.domain");
          else if (of.number == 2 && pb_expect(&sub, &of, PB_VARINT, "OperatorSetIdProto.version")) op.version = (int64_t)of.value;
        }
        if (sub.failed) r.failed = true;
        GROW_PUSH(a, m->opsets, m->nopsets, OnnxOpset);
        m->opsets[m->nopsets - 1] = op;
      }
      break;
    default: break;
    }
  }
  if (r.failed) return NULL;
  if (!m->producer_name) m->producer_name = "";
  if (!m->graph) {
    err_set(err, LOOM_ERR_PARSE, "ONNX model has no graph (is this an ONNX ModelProto file?)");
    return NULL;
  }
  return m;
}

OnnxTensor *onnx_tensor_decode(Arena *a, const uint8_t *data, size_t size, LoomError *err) {
  PbReader r = pb_reader_init(data, size, err);
  PbField whole = {.number = 0, .wire = PB_LEN, .data = data, .len = size, .offset = 0};
  OnnxTensor *t = ARENA_NEW(a, OnnxTensor);
  return decode_tensor(&r, a, &whole, t) ? t : NULL;
}
