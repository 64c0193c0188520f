/* Reading an artifact: header checks, metadata validation, loading the
 * kernels. Everything from the file is untrusted (the loader is fuzzed). */
#include "runtime/artifact.h"

#include "runtime/artifact_checksum.h"
#include "runtime/artifact_format.h"
#include "runtime/dl_dtype.h"
#include "runtime/threadpool.h"
#include "support/alloc.h"
#include "support/oom.h"

#include <cJSON.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *artifact_arg_kind_name(ArtifactArgKind k) {
  switch (k) {
    case ARTIFACT_ARG_INPUT: return "input";
    case ARTIFACT_ARG_OUTPUT: return "output";
    case ARTIFACT_ARG_WEIGHT: return "weight";
    case ARTIFACT_ARG_ARENA: return "arena";
    case ARTIFACT_ARG_OUTPUT_SHAPE: return "output_shape";
  }
  return "?";
}

/* ---- metadata ---- */

typedef struct Reader {
  Arena *a;
  const char *what; /* the file, for messages */
  LoomError *err;
} Reader;

static loom_status meta_fail(Reader *r, const char *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static loom_status meta_fail(Reader *r, const char *where, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return err_set(r->err, LOOM_ERR_PARSE, "artifact \"%s\": corrupt metadata: %s: %s", r->what, where, msg);
}

static const cJSON *get(const cJSON *obj, const char *key) { return cJSON_GetObjectItemCaseSensitive(obj, key); }

/* A member of a metadata object: its value (NULL when absent) and where it
 * sits ("kernels[3].name"), so that every message names the field. */
typedef struct Field {
  const cJSON *v;
  char at[160];
} Field;

static Field field(const cJSON *obj, const char *where, const char *key) {
  Field f = {get(obj, key), ""};
  snprintf(f.at, sizeof f.at, "%s.%s", where, key);
  return f;
}

static loom_status read_uint(Reader *r, const cJSON *v, const char *where, uint64_t limit, uint64_t *out) {
  if (!cJSON_IsNumber(v)) return meta_fail(r, where, "expected a non-negative integer");
  double d = v->valuedouble;
  if (!isfinite(d) || d < 0 || d != floor(d) || d > (double)limit)
    return meta_fail(r, where, "expected an integer in [0, %llu], got %g", (unsigned long long)limit, d);
  *out = (uint64_t)d;
  return LOOM_OK;
}

/* A name: 1..ARTIFACT_MAX_NAME printable bytes (UTF-8 allowed). */
static loom_status read_name(Reader *r, const cJSON *v, const char *where, const char **out) {
  if (!cJSON_IsString(v) || !v->valuestring) return meta_fail(r, where, "expected a string");
  const char *s = v->valuestring;
  size_t n = strlen(s);
  if (n == 0 || n > ARTIFACT_MAX_NAME) return meta_fail(r, where, "expected 1 to %d bytes, got %zu", ARTIFACT_MAX_NAME, n);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return meta_fail(r, where, "control character in a name");
  *out = arena_strdup(r->a, s);
  return LOOM_OK;
}

static bool is_c_identifier(const char *s) {
  if (!(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
  return true;
}

/* A name the loader looks up with dlsym; at most 100 bytes so that
 * NAME_workspace_bytes fits too. */
static loom_status read_symbol(Reader *r, const cJSON *v, const char *where, const char **out) {
  loom_status st = read_name(r, v, where, out);
  if (!st && (!is_c_identifier(*out) || strlen(*out) > 100))
    return meta_fail(r, where, "\"%s\" is not a C identifier of at most 100 bytes", *out);
  return st;
}

static loom_status read_dtype(Reader *r, const cJSON *v, const char *where, DLDataType *out) {
  if (!cJSON_IsString(v) || !dl_dtype_parse(v->valuestring, out))
    return meta_fail(r, where, "expected a dtype name (\"float32\", \"int64\", \"bool\", ...)");
  return LOOM_OK;
}

/* Reads one element of a metadata array into `elem`; `where` names it
 * ("plan[2].args[0]"), `ctx` is what the array's reader passed. */
typedef loom_status (*ReadElement)(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx);

/* What one kind of metadata array holds. */
typedef struct ArrayOf {
  const char *noun; /* the elements, for messages ("dimensions") */
  int max;          /* the file sets the count: allocations stay bounded */
  size_t size;      /* bytes of one element read */
  bool objects;     /* each element must be a JSON object */
  ReadElement read;
} ArrayOf;

/* The array `v` (`where` in messages: "kernels", "plan[2].args"), read
 * element by element into an arena array of `of->size`-byte slots. Every
 * array of the metadata goes through here, so every message names the
 * array, the index and, through Field, the member. */
static loom_status read_array_of(Reader *r, const cJSON *v, const char *where, const ArrayOf *of, const void *ctx,
                                 void **elems, int32_t *n) {
  *elems = NULL;
  if (!cJSON_IsArray(v)) return meta_fail(r, where, "missing, or not an array of %s", of->noun);
  int count = cJSON_GetArraySize(v);
  if (count > of->max) return meta_fail(r, where, "%d %s, at most %d allowed", count, of->noun, of->max);
  char *out = arena_alloc(r->a, of->size * (size_t)(count > 0 ? count : 1));
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, v) {
    char at[160];
    snprintf(at, sizeof at, "%s[%d]", where, i);
    if (of->objects && !cJSON_IsObject(e)) return meta_fail(r, at, "expected an object");
    loom_status st = of->read(r, e, at, out + (size_t)i * of->size, ctx);
    if (st) return st;
    i++;
  }
  *elems = out;
  *n = count;
  return LOOM_OK;
}

static loom_status read_dim(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx) {
  (void)ctx;
  uint64_t x = 0;
  loom_status st = read_uint(r, v, where, ARTIFACT_MAX_INT, &x);
  if (!st) *(int64_t *)elem = (int64_t)x;
  return st;
}

static loom_status read_shape(Reader *r, const cJSON *v, const char *where, DLDataType dtype, int32_t *ndim,
                              const int64_t **shape, uint64_t *nbytes) {
  static const ArrayOf dims = {"dimensions", ARTIFACT_MAX_DIMS, sizeof(int64_t), false, read_dim};
  void *elems;
  int32_t n;
  loom_status st = read_array_of(r, v, where, &dims, NULL, &elems, &n);
  if (st) return st;
  if (!dl_shape_bytes(elems, n, dl_dtype_bytes(dtype), ARTIFACT_MAX_BYTES, nbytes))
    return meta_fail(r, where, "tensor larger than %llu bytes", (unsigned long long)ARTIFACT_MAX_BYTES);
  *ndim = n;
  *shape = elems;
  return LOOM_OK;
}

/* The members every tensor has: name, dtype, shape. */
static loom_status read_tensor(Reader *r, const cJSON *v, const char *where, ArtifactTensor *t) {
  Field name = field(v, where, "name"), dtype = field(v, where, "dtype"), shape = field(v, where, "shape");
  loom_status st = read_name(r, name.v, name.at, &t->name);
  if (!st) st = read_dtype(r, dtype.v, dtype.at, &t->dtype);
  if (!st) st = read_shape(r, shape.v, shape.at, t->dtype, &t->ndim, &t->shape, &t->nbytes);
  return st;
}

/* An input or output. ctx: whether it is an output, the only kind that may
 * have the optional "dynamic" flag (artifact.h), with rank >= 1. */
static loom_status read_graph_tensor(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx) {
  ArtifactTensor *t = elem;
  loom_status st = read_tensor(r, v, where, t);
  Field dynamic = field(v, where, "dynamic");
  if (st || !dynamic.v) return st;
  if (!*(const bool *)ctx) return meta_fail(r, dynamic.at, "only outputs can have dynamic extents");
  if (!cJSON_IsBool(dynamic.v)) return meta_fail(r, dynamic.at, "expected true or false");
  t->dynamic = cJSON_IsTrue(dynamic.v);
  if (t->dynamic && t->ndim < 1) return meta_fail(r, dynamic.at, "a dynamic output needs rank >= 1");
  return LOOM_OK;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static loom_status read_graph_tensors(Reader *r, const cJSON *root, const char *key, bool outputs,
                                      ArtifactTensor **out, int32_t *count) {
  static const ArrayOf tensors = {"tensors", 1 << 20, sizeof(ArtifactTensor), true, read_graph_tensor};
  void *elems;
  int32_t n;
  loom_status st = read_array_of(r, get(root, key), key, &tensors, &outputs, &elems, &n);
  if (st) return st;
  ArtifactTensor *ts = elems;
  /* Duplicates by sorting names: a pairwise check is quadratic in a count
   * the file controls. */
  const char **names = ARENA_ARRAY(r->a, const char *, n);
  for (int k = 0; k < n; k++) names[k] = ts[k].name;
  qsort(names, (size_t)n, sizeof *names, cmp_names);
  for (int k = 1; k < n; k++)
    if (!strcmp(names[k - 1], names[k])) return meta_fail(r, key, "duplicate name \"%s\"", names[k]);
  *out = ts;
  *count = n;
  return LOOM_OK;
}

/* ctx: the Artifact, whose weights section the weight must lie in. */
static loom_status read_weight(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx) {
  const Artifact *art = ctx;
  ArtifactWeight *w = elem;
  Field offset = field(v, where, "offset");
  loom_status st = read_tensor(r, v, where, &w->t);
  if (!st) st = read_uint(r, offset.v, offset.at, ARTIFACT_MAX_INT, &w->offset);
  if (st) return st;
  if (w->offset % ARTIFACT_ALIGN)
    return meta_fail(r, offset.at, "%llu is not a multiple of %d", (unsigned long long)w->offset, ARTIFACT_ALIGN);
  if (w->offset > art->weights_size || w->t.nbytes > art->weights_size - w->offset)
    return meta_fail(r, where, "\"%s\" (%llu bytes at offset %llu) lies outside the %llu-byte weights section",
                     w->t.name, (unsigned long long)w->t.nbytes, (unsigned long long)w->offset,
                     (unsigned long long)art->weights_size);
  w->data = art->weights + w->offset;
  return LOOM_OK;
}

static loom_status read_weights(Reader *r, const cJSON *root, Artifact *art) {
  static const ArrayOf weights = {"weights", 1 << 24, sizeof(ArtifactWeight), true, read_weight};
  void *elems;
  loom_status st = read_array_of(r, get(root, "weights"), "weights", &weights, art, &elems, &art->spec.num_weights);
  art->spec.weights = elems;
  return st;
}

static loom_status read_node_name(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx) {
  (void)ctx;
  return read_name(r, v, where, elem);
}

/* ctx: the ArtifactSpec, weights read (a blob is one of them). */
static loom_status read_kernel(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx) {
  static const ArrayOf node_names = {"ONNX node names", 1 << 20, sizeof(const char *), false, read_node_name};
  const ArtifactSpec *s = ctx;
  ArtifactKernel *k = elem;
  Field name = field(v, where, "name"), nodes = field(v, where, "nodes"), flops = field(v, where, "flops");
  Field backend = field(v, where, "backend"), entry = field(v, where, "runtime_entry"), blob = field(v, where, "blob");
  void *names = NULL;
  loom_status st = read_symbol(r, name.v, name.at, &k->name);
  if (!st) st = read_array_of(r, nodes.v, nodes.at, &node_names, NULL, &names, &k->num_nodes);
  k->nodes = names;
  if (st) return st;
  /* Optional (older artifacts lack it): the FLOPs of one call. */
  if (flops.v && (st = read_uint(r, flops.v, flops.at, ARTIFACT_MAX_INT, &k->flops))) return st;
  /* Optional: the external (BYOC) back end that wrote the kernel. */
  if (backend.v && (st = read_name(r, backend.v, backend.at, &k->backend))) return st;
  /* Optional, the blob form (loom/loom_byoc.h): its runtime's entry and
   * the weight that holds the blob. */
  if (!entry.v) return LOOM_OK;
  if ((st = read_symbol(r, entry.v, entry.at, &k->runtime_entry))) return st;
  if (!backend.v) return meta_fail(r, entry.at, "an external kernel's runtime entry needs its \"backend\"");
  uint64_t b;
  if ((st = read_uint(r, blob.v, blob.at, ARTIFACT_MAX_INT, &b))) return st;
  if (b >= (uint64_t)s->num_weights)
    return meta_fail(r, blob.at, "weight %llu does not exist (%d weights)", (unsigned long long)b, (int)s->num_weights);
  k->blob = (int32_t)b;
  return LOOM_OK;
}

static loom_status read_kernels(Reader *r, const cJSON *root, Artifact *art) {
  static const ArrayOf kernels = {"kernels", 1 << 20, sizeof(ArtifactKernel), true, read_kernel};
  void *elems;
  loom_status st =
      read_array_of(r, get(root, "kernels"), "kernels", &kernels, &art->spec, &elems, &art->spec.num_kernels);
  art->spec.kernels = elems;
  return st;
}

static const ArtifactTensor *arg_source(const ArtifactSpec *s, ArtifactArgKind kind, int32_t index) {
  switch (kind) {
    case ARTIFACT_ARG_INPUT: return index < s->num_inputs ? &s->inputs[index] : NULL;
    case ARTIFACT_ARG_OUTPUT: return index < s->num_outputs ? &s->outputs[index] : NULL;
    case ARTIFACT_ARG_WEIGHT: return index < s->num_weights ? &s->weights[index].t : NULL;
    case ARTIFACT_ARG_OUTPUT_SHAPE: return index < s->num_outputs ? &s->outputs[index] : NULL;
    case ARTIFACT_ARG_ARENA: break;
  }
  return NULL;
}

static bool same_shape(int32_t n1, const int64_t *s1, int32_t n2, const int64_t *s2) {
  if (n1 != n2) return false;
  for (int32_t i = 0; i < n1; i++)
    if (s1[i] != s2[i]) return false;
  return true;
}

/* ctx: the ArtifactSpec, tensors and weights read (what an argument views). */
static loom_status read_arg(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx) {
  const ArtifactSpec *s = ctx;
  ArtifactArg *a = elem;
  Field kind = field(v, where, "kind"), dtype = field(v, where, "dtype"), shape = field(v, where, "shape");
  Field offset = field(v, where, "offset"), index = field(v, where, "index");
  const char *kinds = "expected \"input\", \"output\", \"weight\", \"arena\" or \"output_shape\"";
  const char *k = cJSON_IsString(kind.v) ? kind.v->valuestring : "";
  if (!strcmp(k, "input")) a->kind = ARTIFACT_ARG_INPUT;
  else if (!strcmp(k, "output")) a->kind = ARTIFACT_ARG_OUTPUT;
  else if (!strcmp(k, "weight")) a->kind = ARTIFACT_ARG_WEIGHT;
  else if (!strcmp(k, "arena")) a->kind = ARTIFACT_ARG_ARENA;
  else if (!strcmp(k, "output_shape")) a->kind = ARTIFACT_ARG_OUTPUT_SHAPE;
  else return meta_fail(r, kind.at, "%s", kinds);
  uint64_t nbytes;
  loom_status st = read_dtype(r, dtype.v, dtype.at, &a->dtype);
  if (!st) st = read_shape(r, shape.v, shape.at, a->dtype, &a->ndim, &a->shape, &nbytes);
  if (st) return st;
  if (a->kind == ARTIFACT_ARG_ARENA) {
    if ((st = read_uint(r, offset.v, offset.at, ARTIFACT_MAX_INT, &a->offset))) return st;
    if (a->offset > s->arena_bytes || nbytes > s->arena_bytes - a->offset)
      return meta_fail(r, where, "%llu bytes at arena offset %llu exceed the %llu-byte arena",
                       (unsigned long long)nbytes, (unsigned long long)a->offset,
                       (unsigned long long)s->arena_bytes);
    if (a->offset % dl_dtype_bytes(a->dtype))
      return meta_fail(r, where, "arena offset %llu is not aligned to its %zu-byte elements",
                       (unsigned long long)a->offset, dl_dtype_bytes(a->dtype));
    a->view = true;
    return LOOM_OK;
  }
  uint64_t idx;
  if ((st = read_uint(r, index.v, index.at, INT32_MAX, &idx))) return st;
  a->index = (int32_t)idx;
  const ArtifactTensor *src = arg_source(s, a->kind, a->index);
  if (!src) return meta_fail(r, index.at, "%s %d does not exist", artifact_arg_kind_name(a->kind), a->index);
  if (a->kind == ARTIFACT_ARG_OUTPUT_SHAPE) {
    /* the output's shape array, where the kernel writes the real extents */
    if (!src->dynamic) return meta_fail(r, index.at, "output \"%s\" is not dynamic", src->name);
    if (a->dtype.code != kDLInt || a->dtype.bits != 64 || a->dtype.lanes != 1 || a->ndim != 1 || a->shape[0] != src->ndim)
      return meta_fail(r, where, "the shape of output \"%s\" must be passed as int64 [%d]", src->name, (int)src->ndim);
    a->view = true;
    return LOOM_OK;
  }
  if (!dl_dtype_equal(src->dtype, a->dtype) || nbytes != src->nbytes)
    return meta_fail(r, where, "views %s \"%s\" with another dtype or element count", artifact_arg_kind_name(a->kind),
                     src->name);
  a->view = !same_shape(a->ndim, a->shape, src->ndim, src->shape);
  return LOOM_OK;
}

/* ctx: the ArtifactSpec, kernels read. */
static loom_status read_call(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx) {
  static const ArrayOf args = {"arguments", ARTIFACT_MAX_ARGS, sizeof(ArtifactArg), true, read_arg};
  const ArtifactSpec *s = ctx;
  ArtifactCall *c = elem;
  Field kernel = field(v, where, "kernel"), args_field = field(v, where, "args");
  uint64_t k;
  loom_status st = read_uint(r, kernel.v, kernel.at, INT32_MAX, &k);
  if (st) return st;
  if (k >= (uint64_t)s->num_kernels)
    return meta_fail(r, kernel.at, "kernel %llu does not exist (%d kernels)", (unsigned long long)k, s->num_kernels);
  c->kernel = (int32_t)k;
  void *elems;
  st = read_array_of(r, args_field.v, args_field.at, &args, s, &elems, &c->num_args);
  c->args = elems;
  return st;
}

static loom_status read_plan(Reader *r, const cJSON *root, Artifact *art) {
  static const ArrayOf plan = {"calls", 1 << 20, sizeof(ArtifactCall), true, read_call};
  void *elems;
  int32_t n;
  loom_status st = read_array_of(r, get(root, "plan"), "plan", &plan, &art->spec, &elems, &n);
  if (st) return st;
  const ArtifactCall *calls = elems;
  bool *written = ARENA_ARRAY(r->a, bool, art->spec.num_outputs);
  bool *shape_written = ARENA_ARRAY(r->a, bool, art->spec.num_outputs);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < calls[i].num_args; j++) {
      const ArtifactArg *a = &calls[i].args[j];
      if (a->kind == ARTIFACT_ARG_OUTPUT) written[a->index] = true;
      if (a->kind == ARTIFACT_ARG_OUTPUT_SHAPE) shape_written[a->index] = true;
    }
  for (int32_t o = 0; o < art->spec.num_outputs; o++) {
    const ArtifactTensor *t = &art->spec.outputs[o];
    uint64_t nb = 0;
    bool empty = dl_shape_bytes(t->shape, t->ndim, 1, UINT64_MAX, &nb) && nb == 0; /* nothing to write */
    if (!written[o] && !empty) return meta_fail(r, "plan", "no call writes output \"%s\"", t->name);
  }
  for (int32_t o = 0; o < art->spec.num_outputs; o++)
    if (art->spec.outputs[o].dynamic && !shape_written[o])
      return meta_fail(r, "plan", "no call writes the shape of dynamic output \"%s\"", art->spec.outputs[o].name);
  art->spec.calls = calls;
  art->spec.num_calls = n;
  return LOOM_OK;
}

static loom_status read_byoc_runtime(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx) {
  (void)ctx;
  ArtifactByocRuntime *rt = elem;
  Field backend = field(v, where, "backend"), library = field(v, where, "library");
  loom_status st = read_name(r, backend.v, backend.at, &rt->backend);
  if (!st) st = read_name(r, library.v, library.at, &rt->library);
  return st;
}

/* Optional: the libraries external kernels call (artifact.h). */
static loom_status read_byoc_runtimes(Reader *r, const cJSON *root, Artifact *art) {
  static const ArrayOf runtimes = {"runtime libraries", 64, sizeof(ArtifactByocRuntime), true, read_byoc_runtime};
  if (!get(root, "byoc_runtimes")) return LOOM_OK;
  void *elems;
  loom_status st = read_array_of(r, get(root, "byoc_runtimes"), "byoc_runtimes", &runtimes, NULL, &elems,
                                 &art->spec.num_byoc_runtimes);
  art->spec.byoc_runtimes = elems;
  return st;
}

static loom_status read_offset(Reader *r, const cJSON *v, const char *where, void *elem, const void *ctx) {
  (void)ctx;
  return read_uint(r, v, where, ARTIFACT_MAX_INT, elem);
}

/* The optional run entry: a symbol, and the weight offsets it was generated
 * for, which must be the weights table's (else the entry would read the
 * wrong bytes). The plan hash it must carry is computed here, compared at
 * load. */
static loom_status read_run_entry(Reader *r, const cJSON *root, Artifact *art) {
  static const ArrayOf offsets = {"offsets", 1 << 24, sizeof(uint64_t), false, read_offset};
  const cJSON *v = get(root, "run_entry");
  if (!v) return LOOM_OK;
  ArtifactSpec *s = &art->spec;
  const char *name;
  void *elems;
  int32_t n;
  loom_status st = read_symbol(r, v, "run_entry", &name);
  const char *key = "run_entry_weight_offsets";
  if (!st) st = read_array_of(r, get(root, key), key, &offsets, NULL, &elems, &n);
  if (st) return st;
  if (n != s->num_weights)
    return meta_fail(r, key, "%d entries for %d weights", n, (int)s->num_weights);
  const uint64_t *offs = elems;
  for (int i = 0; i < n; i++)
    if (offs[i] != s->weights[i].offset) {
      char at[64];
      snprintf(at, sizeof at, "%s[%d]", key, i);
      return meta_fail(r, at, "the run entry assumes weight \"%s\" at offset %llu, the weights table has it at %llu",
                       s->weights[i].t.name, (unsigned long long)offs[i], (unsigned long long)s->weights[i].offset);
    }
  s->run_entry = name;
  s->run_entry_weight_offsets = offs;
  art->run_hash = artifact_run_hash(s, offs);
  return LOOM_OK;
}

static loom_status read_metadata(Reader *r, const cJSON *root, Artifact *art) {
  loom_status st = LOOM_OK;
  if (!cJSON_IsObject(root)) st = meta_fail(r, "JSON", "expected an object");
  ArtifactTensor *ins = NULL, *outs = NULL;
  if (!st) st = read_graph_tensors(r, root, "inputs", false, &ins, &art->spec.num_inputs);
  if (!st) st = read_graph_tensors(r, root, "outputs", true, &outs, &art->spec.num_outputs);
  art->spec.inputs = ins;
  art->spec.outputs = outs;
  if (!st && art->spec.num_outputs == 0) st = meta_fail(r, "outputs", "a model needs at least one output");
  if (!st) st = read_uint(r, get(root, "arena_bytes"), "arena_bytes", ARTIFACT_MAX_BYTES, &art->spec.arena_bytes);
  if (!st)
    st = read_uint(r, get(root, "intermediate_bytes"), "intermediate_bytes", ARTIFACT_MAX_INT,
                   &art->spec.intermediate_bytes);
  if (!st) st = read_weights(r, root, art);
  if (!st) st = read_kernels(r, root, art);
  if (!st) st = read_plan(r, root, art);
  if (!st) st = read_byoc_runtimes(r, root, art);
  if (!st) st = read_run_entry(r, root, art);
  return st;
}

/* The tables go into art's arena under a recovery point (support/oom.h):
 * arena allocations cannot return an error through the readers. The JSON
 * is parsed before the point, so that the tree is still ours to delete
 * after a longjmp. */
static loom_status parse_metadata(Artifact *art, const char *json, size_t len, const char *what, LoomError *err) {
  cJSON *root = cJSON_ParseWithLength(json, len);
  if (!root) return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": corrupt metadata: JSON: does not parse", what);
  OomRecovery rec;
  if (setjmp(*oom_recovery_push(&rec))) {
    art->arena = NULL; /* created under the point: the unwind releases it */
    cJSON_Delete(root);
    loom_status st = oom_recovery_unwind(&rec, err);
    err_prefix(err, "artifact \"%s\"", what);
    return st;
  }
  art->arena = arena_new();
  Reader r = {art->arena, what, err};
  loom_status st = read_metadata(&r, root, art);
  oom_recovery_pop(&rec);
  cJSON_Delete(root);
  return st;
}

/* ---- header ---- */

/* A NUL-padded string field: printable, NUL-terminated inside the field. */
static bool read_fixed_string(const uint8_t *p, size_t n, char *out) {
  size_t len = strnlen((const char *)p, n);
  if (len == 0 || len == n) return false;
  for (size_t i = 0; i < len; i++)
    if (p[i] < 0x21 || p[i] > 0x7e) return false;
  for (size_t i = len; i < n; i++)
    if (p[i]) return false;
  memcpy(out, p, len);
  out[len] = 0;
  return true;
}

/* "0.1.0" and "0.1.7" are compatible; "0.2.0" is not. */
static bool same_major_minor(const char *a, const char *b) {
  const char *da = strchr(a, '.'), *db = strchr(b, '.');
  if (!da || !db) return !strcmp(a, b);
  const char *ea = strchr(da + 1, '.'), *eb = strchr(db + 1, '.');
  size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
  return la == lb && !strncmp(a, b, la);
}

static loom_status section_check(const char *what, const char *name, uint64_t off, uint64_t size, uint64_t min_off,
                                 uint64_t file_size, LoomError *err) {
  if (off < min_off || off > file_size || size > file_size - off)
    return err_set(err, LOOM_ERR_PARSE,
                   "artifact \"%s\": corrupt header: %s section [%llu, +%llu) lies outside [%llu, %llu)", what, name,
                   (unsigned long long)off, (unsigned long long)size, (unsigned long long)min_off,
                   (unsigned long long)file_size);
  return LOOM_OK;
}

/* The bytes no section covers must be zero: no checksum vouches for them. */
static loom_status padding_check(const uint8_t *b, uint64_t from, uint64_t to, const char *after, const char *what,
                                 LoomError *err) {
  for (uint64_t i = from; i < to; i++)
    if (b[i])
      return err_set(err, LOOM_ERR_PARSE,
                     "artifact \"%s\": non-zero byte at offset %llu in the padding after the %s: the file is damaged",
                     what, (unsigned long long)i, after);
  return LOOM_OK;
}

/* A format-version-1 file (before the CRCs), recognized so it is refused by
 * its version rather than as damage: its bytes [176, 192), where version 2
 * keeps its CRCs, are zero. */
static bool is_format_v1(const uint8_t *b, size_t len) {
  if (len < ARTIFACT_HEADER_BYTES || hdr_get_u32(b + HDR_VERSION) != 1 ||
      hdr_get_u32(b + HDR_HEADER_BYTES) != ARTIFACT_HEADER_BYTES)
    return false;
  for (int i = HDR_V1_RESERVED; i < ARTIFACT_HEADER_BYTES; i++)
    if (b[i]) return false;
  return true;
}

/* A later version's header that its own trailing CRC vouches for (every
 * version from 2 on ends its header with one, artifact_format.h). */
static bool is_intact_later_version(const uint8_t *b, size_t len) {
  enum { MAX_HEADER = 1 << 16 }; /* bounds the work a damaged header size can ask for */
  uint32_t n = hdr_get_u32(b + HDR_HEADER_BYTES);
  if (hdr_get_u32(b + HDR_VERSION) <= ARTIFACT_FORMAT_VERSION || n < HDR_FIXED_BYTES + 4 || n > len ||
      n > MAX_HEADER)
    return false;
  return artifact_crc32(0, b, n - 4) == hdr_get_u32(b + n - 4);
}

static loom_status version_refusal(const char *what, uint32_t version, LoomError *err) {
  return err_set(err, LOOM_ERR_UNSUPPORTED,
                 "artifact \"%s\": artifact format version %u, this loader reads %d: recompile the model", what,
                 version, ARTIFACT_FORMAT_VERSION);
}

loom_status artifact_parse(const void *image, size_t len, const char *what, int flags, Artifact **out,
                           LoomError *err) {
  *out = NULL;
  const uint8_t *b = image;
  bool verify = !(flags & ARTIFACT_SKIP_CHECKSUM);
  if (len < 8 || memcmp(b, ARTIFACT_MAGIC, 8))
    return err_set(err, LOOM_ERR_PARSE,
                   "\"%s\" is not a Loom artifact (its header lacks the magic \"LOOMART\"; expected a file written "
                   "by `loom compile`)",
                   what);
  if (len < HDR_FIXED_BYTES)
    return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\" is truncated: %zu bytes, the header alone needs %d", what, len,
                   ARTIFACT_HEADER_BYTES);
  /* Another version is refused by its number only when its header is
   * intact; a damaged version field is damage (the header CRC below). */
  uint32_t version = hdr_get_u32(b + HDR_VERSION);
  if (version != ARTIFACT_FORMAT_VERSION && (!verify || is_format_v1(b, len) || is_intact_later_version(b, len)))
    return version_refusal(what, version, err);
  if (len < ARTIFACT_HEADER_BYTES)
    return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\" is truncated: %zu bytes, the header alone needs %d", what, len,
                   ARTIFACT_HEADER_BYTES);
  /* Nothing of the header is believed before its CRC: a damaged offset or
   * size would otherwise send the checks below to the wrong bytes. */
  loom_status st = LOOM_OK;
  if (verify && (st = artifact_verify_section(b, 0, HDR_HEADER_CRC, hdr_get_u32(b + HDR_HEADER_CRC), what, "header",
                                              err)))
    return st;
  if (version != ARTIFACT_FORMAT_VERSION) return version_refusal(what, version, err);
  if (hdr_get_u32(b + HDR_HEADER_BYTES) != ARTIFACT_HEADER_BYTES)
    return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": corrupt header: header size %u, expected %d", what,
                   hdr_get_u32(b + HDR_HEADER_BYTES), ARTIFACT_HEADER_BYTES);
  for (int i = HDR_RESERVED; i < HDR_HEADER_CRC; i++)
    if (b[i]) return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": corrupt header: reserved byte %d is not zero", what, i);
  char loom_version[HDR_LOOM_VERSION_LEN + 1], target[HDR_TARGET_LEN + 1];
  if (!read_fixed_string(b + HDR_LOOM_VERSION, HDR_LOOM_VERSION_LEN, loom_version))
    return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": corrupt header: bad Loom version field", what);
  if (!read_fixed_string(b + HDR_TARGET, HDR_TARGET_LEN, target))
    return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": corrupt header: bad target field", what);
  uint64_t file_size = hdr_get_u64(b + HDR_FILE_SIZE);
  if (len < file_size)
    return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\" is truncated: %zu bytes, its header says %llu", what, len,
                   (unsigned long long)file_size);
  if (len > file_size)
    return err_set(err, LOOM_ERR_PARSE,
                   "artifact \"%s\" has %llu bytes past its end: %zu bytes, its header says %llu; the file is damaged",
                   what, (unsigned long long)(len - file_size), len, (unsigned long long)file_size);
  if (!(flags & ARTIFACT_SKIP_VERSION_CHECK) && !same_major_minor(loom_version, LOOM_VERSION_STRING))
    return err_set(err, LOOM_ERR_UNSUPPORTED,
                   "artifact \"%s\" was written by Loom %s, this runtime is Loom %s (recompile the model)", what,
                   loom_version, LOOM_VERSION_STRING);
  if (!(flags & ARTIFACT_SKIP_TARGET_CHECK)) {
    st = artifact_check_target(target, err);
    if (st) {
      err_prefix(err, "artifact \"%s\"", what);
      return st;
    }
  }
  uint64_t meta_off = hdr_get_u64(b + HDR_META_OFFSET), meta_size = hdr_get_u64(b + HDR_META_SIZE);
  uint64_t w_off = hdr_get_u64(b + HDR_WEIGHTS_OFFSET), w_size = hdr_get_u64(b + HDR_WEIGHTS_SIZE);
  uint64_t so_off = hdr_get_u64(b + HDR_SO_OFFSET), so_size = hdr_get_u64(b + HDR_SO_SIZE);
  st = section_check(what, "metadata", meta_off, meta_size, ARTIFACT_HEADER_BYTES, len, err);
  if (!st) st = section_check(what, "weights", w_off, w_size, meta_off + meta_size, len, err);
  if (!st) st = section_check(what, "shared object", so_off, so_size, w_off + w_size, len, err);
  if (st) return st;
  if (w_off % ARTIFACT_ALIGN)
    return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": corrupt header: weights offset %llu is not %d-byte aligned",
                   what, (unsigned long long)w_off, ARTIFACT_ALIGN);
  if (so_size == 0) return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": corrupt header: empty shared object", what);
  /* Every byte is now accounted for: the header by its CRC, each section by
   * its own, the padding between them by being zero. The sections are
   * verified before any of their bytes is read (the .so is never dlopen'ed
   * unverified: a damaged ELF can crash the dynamic loader). */
  st = padding_check(b, ARTIFACT_HEADER_BYTES, meta_off, "header", what, err);
  if (!st) st = padding_check(b, meta_off + meta_size, w_off, "metadata section", what, err);
  if (!st) st = padding_check(b, w_off + w_size, so_off, "weights section", what, err);
  if (!st) st = padding_check(b, so_off + so_size, len, "shared object section", what, err);
  if (!st && verify)
    st = artifact_verify_section(b, meta_off, meta_size, hdr_get_u32(b + HDR_META_CRC), what, "metadata", err);
  if (!st && verify)
    st = artifact_verify_section(b, w_off, w_size, hdr_get_u32(b + HDR_WEIGHTS_CRC), what, "weights", err);
  if (!st && verify)
    st = artifact_verify_section(b, so_off, so_size, hdr_get_u32(b + HDR_SO_CRC), what, "shared object", err);
  if (st) return st;
  if (memchr(b + meta_off, 0, meta_size))
    return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": corrupt metadata: NUL byte in the JSON", what);

  Artifact *art = loom_calloc(1, sizeof *art);
  if (!art) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "artifact \"%s\": out of memory", what);
  art->so_fd = -1;
  art->format_version = version;
  memcpy(art->loom_version, loom_version, sizeof loom_version);
  memcpy(art->target, target, sizeof target);
  art->weights = b + w_off;
  art->weights_size = w_size;
  art->meta_offset = meta_off;
  art->meta_size = meta_size;
  art->weights_offset = w_off;
  art->so_offset = so_off;
  art->file_size = len;
  art->spec.target = art->target;
  art->spec.loom_version = art->loom_version;
  art->spec.so_bytes = b + so_off;
  art->spec.so_size = (size_t)so_size;
  st = parse_metadata(art, (const char *)b + meta_off, (size_t)meta_size, what, err);
  if (st) {
    artifact_free(art);
    return st;
  }
  *out = art;
  return LOOM_OK;
}

/* ---- loading ---- */

static loom_status write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return LOOM_ERR_IO;
    }
    p += k;
    n -= (size_t)k;
  }
  return LOOM_OK;
}

/* The .so bytes go to an anonymous memfd (nothing left on disk, nothing to
 * clean up after a crash); where memfd or /proc is unavailable, to a private
 * temporary file. Both stay until artifact_free: see Artifact.so_fd. */
static loom_status load_module(Artifact *art, const char *what, int flags, LoomError *err) {
  int fd = flags & ARTIFACT_NO_MEMFD ? -1 : memfd_create("loom-model.so", MFD_CLOEXEC);
  if (fd >= 0) {
    if (write_all(fd, art->spec.so_bytes, art->spec.so_size) == LOOM_OK) {
      char p[64];
      snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
      loom_status st = module_load(p, &art->module, err);
      if (st == LOOM_OK) {
        art->so_fd = fd;
        return LOOM_OK;
      }
      if (st == LOOM_ERR_OUT_OF_MEMORY) { /* the fallback would only hide it */
        close(fd);
        return st;
      }
    }
    close(fd);
  }
  const char *dir = getenv("TMPDIR");
  size_t n = (dir && *dir ? strlen(dir) : 4) + 32;
  char *path = loom_malloc(n);
  if (!path) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "artifact \"%s\": out of memory", what);
  snprintf(path, n, "%s/loom-model-XXXXXX.so", dir && *dir ? dir : "/tmp");
  fd = mkstemps(path, 3);
  if (fd < 0) {
    int e = errno;
    loom_free(path);
    return err_set(err, LOOM_ERR_IO, "artifact \"%s\": cannot create a temporary file for its kernels: %s", what,
                   strerror(e));
  }
  loom_status st = write_all(fd, art->spec.so_bytes, art->spec.so_size);
  close(fd);
  if (st) {
    unlink(path);
    loom_free(path);
    return err_set(err, LOOM_ERR_IO, "artifact \"%s\": cannot write its kernels to a temporary file", what);
  }
  art->so_tmp_path = path;
  st = module_load(path, &art->module, err);
  if (st) err_prefix(err, "artifact \"%s\"", what);
  return st;
}

/* The entry and its plan hash must be in the .so, and the hash must be the
 * metadata's: a .so from another compile would run the wrong plan. */
static loom_status resolve_run_entry(Artifact *art, const char *path, LoomError *err) {
  const char *name = art->spec.run_entry;
  if (!name || !*name) return LOOM_OK;
  char hash_name[160];
  snprintf(hash_name, sizeof hash_name, "%s_plan_hash", name);
  void *fn = module_symbol(art->module, name);
  const uint64_t *hash = module_symbol(art->module, hash_name);
  if (!fn || !hash)
    return err_set(err, LOOM_ERR_PARSE,
                   "artifact \"%s\": its shared object lacks the run entry \"%s\" (symbol \"%s\") that the metadata "
                   "names; recompile the model",
                   path, name, fn ? hash_name : name);
  if (*hash != art->run_hash)
    return err_set(err, LOOM_ERR_PARSE,
                   "artifact \"%s\": run entry \"%s\" was generated for another plan (plan hash %016llx in the "
                   "shared object, %016llx from the metadata); recompile the model",
                   path, name, (unsigned long long)*hash, (unsigned long long)art->run_hash);
  memcpy(&art->run_fn, &fn, sizeof art->run_fn);
  return LOOM_OK;
}

loom_status artifact_load(const char *path, int flags, Artifact **out, LoomError *err) {
  return artifact_load_threads(path, flags, 0, out, err);
}

loom_status artifact_load_threads(const char *path, int flags, int num_threads, Artifact **out, LoomError *err) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return err_set(err, LOOM_ERR_IO, "cannot open artifact \"%s\": %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return err_set(err, LOOM_ERR_IO, "cannot read artifact \"%s\": not a regular file", path);
  }
  size_t len = (size_t)sb.st_size;
  void *map = NULL;
  if (len > 0) {
    map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int e = errno;
      close(fd);
      return err_set(err, LOOM_ERR_IO, "cannot read artifact \"%s\": %s", path, strerror(e));
    }
  }
  close(fd);
  static const uint8_t empty[1];
  Artifact *art;
  loom_status st = artifact_parse(map ? map : empty, len, path, flags, &art, err);
  if (st) {
    if (map) munmap(map, len);
    return st;
  }
  art->map = map;
  art->map_len = len;
  if ((st = artifact_load_byoc_runtimes(art, path, err)) || (st = load_module(art, path, flags, err))) {
    artifact_free(art);
    return st;
  }
  art->kernels = loom_calloc((size_t)(art->spec.num_kernels > 0 ? art->spec.num_kernels : 1), sizeof(Kernel));
  if (!art->kernels) {
    artifact_free(art);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "artifact \"%s\": out of memory", path);
  }
  for (int32_t i = 0; i < art->spec.num_kernels; i++) {
    if ((st = module_get_kernel(art->module, art->spec.kernels[i].name, &art->kernels[i], err))) {
      err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": its shared object lacks kernel \"%s\" (kernels[%d])", path,
              art->spec.kernels[i].name, (int)i);
      artifact_free(art);
      return LOOM_ERR_PARSE;
    }
  }
  if ((st = resolve_run_entry(art, path, err)) || (st = artifact_init_external_kernels(art, path, num_threads > 0 ? num_threads : threadpool_default_threads(),
                                                                              err))) {
    artifact_free(art);
    return st;
  }
  *out = art;
  return LOOM_OK;
}

void artifact_free(Artifact *a) {
  if (!a) return;
  loom_free(a->kernels);
  artifact_release_external_kernels(a); /* before the code they run goes */
  module_unload(a->module);
  for (int32_t i = 0; i < a->num_byoc_handles; i++) dlclose(a->byoc_handles[i]);
  loom_free(a->byoc_handles);
  if (a->so_fd >= 0) close(a->so_fd);
  if (a->so_tmp_path) unlink(a->so_tmp_path);
  loom_free(a->so_tmp_path);
  if (a->map) munmap(a->map, a->map_len);
  arena_free(a->arena);
  loom_free(a);
}
