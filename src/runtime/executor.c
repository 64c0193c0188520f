#include "runtime/executor.h"

#include "runtime/dl_dtype.h"
#include "runtime/threadpool.h"
#include "support/alloc.h"
#include "support/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct loom_model {
  Artifact *art;
  ThreadPool *pool;
  void *arena;           /* arena_bytes, 64-byte aligned */
  void **inputs;         /* one 64-byte aligned buffer per graph input */
  bool *input_set;
  void **outputs;
  int64_t **out_shapes;  /* per output: the real shape of a dynamic one (kernels write it), else NULL */
  void *workspace;       /* the largest kernel workspace, shared by all calls */
  size_t workspace_bytes;
  DLTensor *arg_tensors; /* every call's arguments, contiguous */
  DLTensor **arg_ptrs;
  int32_t *arg_start;    /* per call: first index in arg_ptrs */
  /* The run entry's arguments: the input/output buffers as DLTensors. */
  DLTensor *io_tensors;  /* inputs, then outputs */
  DLTensor **io_ptrs;
  bool entry_disabled;   /* executor_set_run_entry: run the plan instead */
  bool profiling;
  double *prof_ms;       /* per call */
  int64_t *prof_runs;
  LoomError err;
};

const Artifact *executor_artifact(const loom_model *m) { return m->art; }

const char *loom_runtime_version(void) { return LOOM_VERSION_STRING; }

/* 64-byte aligned, never 0 bytes (aligned_alloc wants a multiple of the
 * alignment). Input and output buffers are zeroed so a run is deterministic
 * whatever the kernels do; the arena is not: every intermediate is written
 * before it is read, and touching a large arena's pages at load would cost
 * time and resident memory for nothing. */
static void *alloc64(uint64_t bytes, bool zero) {
  if (bytes > SIZE_MAX - 64) return NULL;
  size_t n = (size_t)((bytes + 63) / 64 * 64);
  void *p = loom_aligned_alloc(64, n ? n : 64);
  if (p && zero) memset(p, 0, n ? n : 64);
  return p;
}

void loom_model_free(loom_model *m) {
  if (!m) return;
  if (m->art) {
    for (int32_t i = 0; m->inputs && i < m->art->spec.num_inputs; i++) loom_free(m->inputs[i]);
    for (int32_t i = 0; m->outputs && i < m->art->spec.num_outputs; i++) loom_free(m->outputs[i]);
    for (int32_t i = 0; m->out_shapes && i < m->art->spec.num_outputs; i++) loom_free(m->out_shapes[i]);
  }
  loom_free(m->out_shapes);
  loom_free(m->inputs);
  loom_free(m->input_set);
  loom_free(m->outputs);
  loom_free(m->arena);
  loom_free(m->workspace);
  loom_free(m->arg_tensors);
  loom_free(m->arg_ptrs);
  loom_free(m->arg_start);
  loom_free(m->io_tensors);
  loom_free(m->io_ptrs);
  loom_free(m->prof_ms);
  loom_free(m->prof_runs);
  threadpool_destroy(m->pool);
  artifact_free(m->art);
  loom_free(m);
}

static void *arg_data(loom_model *m, const ArtifactArg *a) {
  const Artifact *art = m->art;
  switch (a->kind) {
    case ARTIFACT_ARG_INPUT: return m->inputs[a->index];
    case ARTIFACT_ARG_OUTPUT: return m->outputs[a->index];
    /* Kernels never write their inputs (the ABI's `restrict` contract), so
     * weights are passed straight from the read-only file mapping. */
    case ARTIFACT_ARG_WEIGHT: return (void *)art->spec.weights[a->index].data;
    case ARTIFACT_ARG_ARENA: return (char *)m->arena + a->offset;
    case ARTIFACT_ARG_OUTPUT_SHAPE: return m->out_shapes[a->index]; /* the loader checked it is dynamic */
  }
  return NULL;
}

static loom_status model_setup(loom_model *m, LoomError *err) {
  const ArtifactSpec *s = &m->art->spec;
  size_t ni = (size_t)s->num_inputs + 1, no = (size_t)s->num_outputs + 1, nc = (size_t)s->num_calls + 1;
  m->inputs = loom_calloc(ni, sizeof(void *));
  m->input_set = loom_calloc(ni, sizeof(bool));
  m->outputs = loom_calloc(no, sizeof(void *));
  m->out_shapes = loom_calloc(no, sizeof(int64_t *));
  m->arena = alloc64(s->arena_bytes, false);
  m->arg_start = loom_calloc(nc, sizeof(int32_t));
  m->prof_ms = loom_calloc(nc, sizeof(double));
  m->prof_runs = loom_calloc(nc, sizeof(int64_t));
  if (!m->inputs || !m->input_set || !m->outputs || !m->out_shapes || !m->arena || !m->arg_start || !m->prof_ms || !m->prof_runs)
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory allocating the model (arena of %llu bytes)",
                   (unsigned long long)s->arena_bytes);
  for (int32_t i = 0; i < s->num_inputs; i++)
    if (!(m->inputs[i] = alloc64(s->inputs[i].nbytes, true)))
      return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory for input \"%s\"", s->inputs[i].name);
  for (int32_t i = 0; i < s->num_outputs; i++) {
    if (!(m->outputs[i] = alloc64(s->outputs[i].nbytes, true)))
      return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory for output \"%s\"", s->outputs[i].name);
    if (s->outputs[i].dynamic) {
      if (!(m->out_shapes[i] = loom_calloc((size_t)s->outputs[i].ndim + 1, sizeof(int64_t))))
        return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory for output \"%s\"", s->outputs[i].name);
      memcpy(m->out_shapes[i], s->outputs[i].shape, sizeof(int64_t) * (size_t)s->outputs[i].ndim);
    }
  }
  size_t total = 0;
  for (int32_t c = 0; c < s->num_calls; c++) {
    m->arg_start[c] = (int32_t)total;
    total += (size_t)s->calls[c].num_args;
  }
  m->arg_start[s->num_calls] = (int32_t)total;
  m->arg_tensors = loom_calloc(total + 1, sizeof(DLTensor));
  m->arg_ptrs = loom_calloc(total + 1, sizeof(DLTensor *));
  if (!m->arg_tensors || !m->arg_ptrs) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t c = 0; c < s->num_calls; c++)
    for (int32_t j = 0; j < s->calls[c].num_args; j++) {
      const ArtifactArg *a = &s->calls[c].args[j];
      DLTensor *t = &m->arg_tensors[m->arg_start[c] + j];
      t->data = arg_data(m, a);
      t->device.device_type = kDLCPU;
      t->ndim = a->ndim;
      t->dtype = a->dtype;
      t->shape = (int64_t *)a->shape; /* kernels read shapes only */
      m->arg_ptrs[m->arg_start[c] + j] = t;
    }
  size_t nio = (size_t)s->num_inputs + (size_t)s->num_outputs;
  m->io_tensors = loom_calloc(nio + 1, sizeof(DLTensor));
  m->io_ptrs = loom_calloc(nio + 1, sizeof(DLTensor *));
  if (!m->io_tensors || !m->io_ptrs) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < nio; i++) {
    bool in = i < (size_t)s->num_inputs;
    const ArtifactTensor *src = in ? &s->inputs[i] : &s->outputs[i - (size_t)s->num_inputs];
    DLTensor *t = &m->io_tensors[i];
    t->data = in ? m->inputs[i] : m->outputs[i - (size_t)s->num_inputs];
    t->device.device_type = kDLCPU;
    t->ndim = src->ndim;
    t->dtype = src->dtype;
    t->shape = (int64_t *)src->shape;
    if (!in && m->out_shapes[i - (size_t)s->num_inputs]) t->shape = m->out_shapes[i - (size_t)s->num_inputs];
    m->io_ptrs[i] = t;
  }
  for (int32_t k = 0; k < s->num_kernels; k++)
    if (m->art->kernels[k].workspace_bytes > m->workspace_bytes) m->workspace_bytes = m->art->kernels[k].workspace_bytes;
  if (m->workspace_bytes) {
    m->workspace_bytes = (m->workspace_bytes + 63) / 64 * 64;
    if (!(m->workspace = alloc64(m->workspace_bytes, false)))
      return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory for a %zu-byte kernel workspace", m->workspace_bytes);
  }
  return LOOM_OK;
}

loom_status loom_model_load(const char *path, const loom_model_options *opt, loom_model **out, char *errbuf,
                            size_t errlen) {
  LoomError err = {0};
  loom_status st;
  *out = NULL;
  loom_model *m = loom_calloc(1, sizeof *m);
  if (!m) {
    st = err_set(&err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  } else if (!path) {
    st = err_set(&err, LOOM_ERR_INVALID_ARG, "loom_model_load: NULL path");
  } else if (!(st = threadpool_create(opt ? opt->num_threads : 0, &m->pool, &err)) &&
             /* the pool first: external back ends' init takes its thread count */
             !(st = artifact_load_threads(path, 0, threadpool_num_threads(m->pool), &m->art, &err))) {
    st = model_setup(m, &err);
  }
  if (st) {
    loom_model_free(m);
    if (errbuf && errlen) snprintf(errbuf, errlen, "%s", err.msg);
    return st;
  }
  if (errbuf && errlen) errbuf[0] = 0;
  *out = m;
  return LOOM_OK;
}

const char *loom_model_error(const loom_model *m) { return m ? m->err.msg : "NULL model"; }

int32_t loom_model_num_inputs(const loom_model *m) { return m->art->spec.num_inputs; }
int32_t loom_model_num_outputs(const loom_model *m) { return m->art->spec.num_outputs; }
int32_t loom_model_num_threads(const loom_model *m) { return threadpool_num_threads(m->pool); }

const char *loom_model_target(const loom_model *m) { return m->art->target; }

static void info_of(const ArtifactTensor *t, loom_tensor_info *out) {
  out->name = t->name;
  out->dtype = t->dtype;
  out->ndim = t->ndim;
  out->shape = t->shape;
  out->dynamic = t->dynamic;
}

loom_status loom_model_input_info(const loom_model *m, int32_t index, loom_tensor_info *out) {
  if (index < 0 || index >= m->art->spec.num_inputs) return LOOM_ERR_INVALID_ARG;
  info_of(&m->art->spec.inputs[index], out);
  return LOOM_OK;
}

loom_status loom_model_output_info(const loom_model *m, int32_t index, loom_tensor_info *out) {
  if (index < 0 || index >= m->art->spec.num_outputs) return LOOM_ERR_INVALID_ARG;
  info_of(&m->art->spec.outputs[index], out);
  return LOOM_OK;
}

static int32_t find(const ArtifactTensor *ts, int32_t n, const char *name) {
  for (int32_t i = 0; name && i < n; i++)
    if (!strcmp(ts[i].name, name)) return i;
  return -1;
}

int32_t loom_model_input_index(const loom_model *m, const char *name) {
  return find(m->art->spec.inputs, m->art->spec.num_inputs, name);
}
int32_t loom_model_output_index(const loom_model *m, const char *name) {
  return find(m->art->spec.outputs, m->art->spec.num_outputs, name);
}

static void describe(DLDataType dtype, int32_t ndim, const int64_t *shape, char *buf, size_t len) {
  const char *dn = dl_dtype_name(dtype);
  char sh[256];
  if (ndim < 0 || ndim > 64 || (ndim > 0 && !shape)) snprintf(sh, sizeof sh, "(ndim %d)", (int)ndim);
  else dl_shape_str(shape, ndim, sh, sizeof sh);
  if (dn) snprintf(buf, len, "%s %s", dn, sh);
  else snprintf(buf, len, "dtype(code %d, %d bits, %d lanes) %s", dtype.code, dtype.bits, dtype.lanes, sh);
}

/* Checks a caller tensor against graph input or output `want` (`what`:
 * "input" / "output"): CPU, dtype, shape, compact row-major, data present. */
static loom_status check_io_tensor(loom_model *m, const char *what, const ArtifactTensor *want, const DLTensor *t) {
  if (!t) return err_set(&m->err, LOOM_ERR_INVALID_ARG, "%s \"%s\": NULL tensor", what, want->name);
  if (t->device.device_type != kDLCPU)
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "%s \"%s\": expected a CPU tensor (device type %d)", what,
                   want->name, (int)t->device.device_type);
  bool ok = dl_dtype_equal(t->dtype, want->dtype) && t->ndim == want->ndim && (t->ndim == 0 || t->shape);
  for (int32_t d = 0; ok && d < t->ndim; d++) ok = t->shape[d] == want->shape[d];
  if (!ok) {
    char expected[320], got[320];
    describe(want->dtype, want->ndim, want->shape, expected, sizeof expected);
    describe(t->dtype, t->ndim, t->shape, got, sizeof got);
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "%s \"%s\": expected %s, got %s", what, want->name, expected, got);
  }
  if (t->strides) {
    int64_t expect = 1;
    for (int32_t d = t->ndim - 1; d >= 0; d--) {
      if (t->shape[d] != 1 && t->strides[d] != expect)
        return err_set(&m->err, LOOM_ERR_INVALID_ARG, "%s \"%s\": expected a compact row-major tensor (strides)",
                       what, want->name);
      expect *= t->shape[d];
    }
  }
  if (want->nbytes && !t->data)
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "%s \"%s\": NULL data", what, want->name);
  return LOOM_OK;
}

/* Points every kernel argument and run-entry tensor that is graph input or
 * output `index` at `data` (the arguments were built once at load). */
static void repoint(loom_model *m, ArtifactArgKind kind, int32_t index, void *data) {
  const ArtifactSpec *s = &m->art->spec;
  for (int32_t c = 0; c < s->num_calls; c++)
    for (int32_t j = 0; j < s->calls[c].num_args; j++) {
      const ArtifactArg *a = &s->calls[c].args[j];
      if (a->kind == kind && a->index == index) m->arg_tensors[m->arg_start[c] + j].data = data;
    }
  m->io_tensors[kind == ARTIFACT_ARG_INPUT ? index : s->num_inputs + index].data = data;
}

loom_status loom_model_set_input(loom_model *m, int32_t index, const DLTensor *t) {
  const ArtifactSpec *s = &m->art->spec;
  if (index < 0 || index >= s->num_inputs)
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "input index %d out of range: the model has %d inputs", (int)index,
                   (int)s->num_inputs);
  const ArtifactTensor *in = &s->inputs[index];
  loom_status st = check_io_tensor(m, "input", in, t);
  if (st) return st;
  if (in->nbytes) memcpy(m->inputs[index], (const char *)t->data + t->byte_offset, (size_t)in->nbytes);
  repoint(m, ARTIFACT_ARG_INPUT, index, m->inputs[index]); /* ends a loom_model_bind_input */
  m->input_set[index] = true;
  return LOOM_OK;
}

/* The kernels check 64-byte alignment of every buffer they declare aligned
 * (LOOM_KERNEL_ERR_ALIGN); refusing here names the input instead of a
 * kernel's argument. */
static bool aligned64(const DLTensor *t) { return ((uintptr_t)t->data + t->byte_offset) % 64 == 0; }

/* The graph input (inputs true) or output whose current buffer overlaps
 * [lo, lo + n), or NULL: a kernel writing an output over an input it still
 * reads would compute garbage. */
static const char *overlapping(const loom_model *m, bool inputs, const char *lo, uint64_t n) {
  const ArtifactSpec *s = &m->art->spec;
  int32_t count = inputs ? s->num_inputs : s->num_outputs;
  for (int32_t i = 0; i < count; i++) {
    const ArtifactTensor *t = inputs ? &s->inputs[i] : &s->outputs[i];
    const char *p = m->io_tensors[inputs ? i : s->num_inputs + i].data;
    if (p && t->nbytes && lo < p + t->nbytes && p < lo + n) return t->name;
  }
  return NULL;
}

loom_status loom_model_bind_input(loom_model *m, int32_t index, const DLTensor *t) {
  const ArtifactSpec *s = &m->art->spec;
  if (index < 0 || index >= s->num_inputs)
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "input index %d out of range: the model has %d inputs", (int)index,
                   (int)s->num_inputs);
  const ArtifactTensor *in = &s->inputs[index];
  if (!t) { /* unbind: back to the model's own buffer, to be set again */
    repoint(m, ARTIFACT_ARG_INPUT, index, m->inputs[index]);
    m->input_set[index] = false;
    return LOOM_OK;
  }
  loom_status st = check_io_tensor(m, "input", in, t);
  if (st) return st;
  if (!in->nbytes) return loom_model_set_input(m, index, t); /* nothing to read: keep the own buffer */
  if (!aligned64(t))
    return err_set(&m->err, LOOM_ERR_INVALID_ARG,
                   "input \"%s\": data at %p is not 64-byte aligned (bind needs it; loom_model_set_input copies)",
                   in->name, (void *)((char *)t->data + t->byte_offset));
  char *data = (char *)t->data + t->byte_offset;
  const char *other = overlapping(m, false, data, in->nbytes);
  if (other)
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "input \"%s\": its buffer overlaps output \"%s\"", in->name, other);
  repoint(m, ARTIFACT_ARG_INPUT, index, data);
  m->input_set[index] = true;
  return LOOM_OK;
}

loom_status loom_model_bind_output(loom_model *m, int32_t index, const DLTensor *t) {
  const ArtifactSpec *s = &m->art->spec;
  if (index < 0 || index >= s->num_outputs)
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "output index %d out of range: the model has %d outputs",
                   (int)index, (int)s->num_outputs);
  const ArtifactTensor *out = &s->outputs[index];
  if (!t || !out->nbytes) { /* back to the model's own buffer */
    repoint(m, ARTIFACT_ARG_OUTPUT, index, m->outputs[index]);
    return LOOM_OK;
  }
  loom_status st = check_io_tensor(m, "output", out, t);
  if (st) return st;
  if (!aligned64(t))
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "output \"%s\": data at %p is not 64-byte aligned", out->name,
                   (void *)((char *)t->data + t->byte_offset));
  char *data = (char *)t->data + t->byte_offset;
  const char *other = overlapping(m, true, data, out->nbytes);
  if (other)
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "output \"%s\": its buffer overlaps input \"%s\"", out->name,
                   other);
  repoint(m, ARTIFACT_ARG_OUTPUT, index, data);
  return LOOM_OK;
}

loom_status loom_model_set_input_by_name(loom_model *m, const char *name, const DLTensor *t) {
  int32_t i = loom_model_input_index(m, name);
  if (i < 0) {
    char names[512] = "";
    size_t at = 0;
    for (int32_t k = 0; k < m->art->spec.num_inputs && at < sizeof names; k++)
      at += (size_t)snprintf(names + at, sizeof names - at, "%s\"%s\"", k ? ", " : "", m->art->spec.inputs[k].name);
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "no input named \"%s\" (the model's inputs: %s)", name ? name : "(null)",
                   names);
  }
  return loom_model_set_input(m, i, t);
}

bool executor_uses_run_entry(const loom_model *m) { return m->art->run_fn && !m->profiling && !m->entry_disabled; }

void executor_set_run_entry(loom_model *m, bool enable) { m->entry_disabled = !enable; }

static loom_status kernel_failed(loom_model *m, int32_t step, int32_t rc) {
  const ArtifactSpec *s = &m->art->spec;
  const Kernel *k = &m->art->kernels[s->calls[step].kernel];
  loom_kernel_err kind = LOOM_KERNEL_ERR_KIND(rc);
  return err_set(&m->err, LOOM_ERR_RUNTIME, "plan step %d: kernel \"%s\" failed: argument %d: %s (code %d)", (int)step,
                 k->name, (int)LOOM_KERNEL_ERR_ARG(rc), kernel_err_kind_name(kind), (int)rc);
}

/* One call into the generated entry: the same kernels, arguments and order
 * as the plan, without the per-call dispatch. */
static loom_status run_entry(loom_model *m, const loom_kernel_env *env) {
  const ArtifactSpec *s = &m->art->spec;
  int32_t step = -1;
  int32_t rc = m->art->run_fn(m->io_ptrs, m->io_ptrs + s->num_inputs, m->art->weights, m->arena, env, &step);
  if (rc == 0) return LOOM_OK;
  if (step >= 0 && step < s->num_calls) return kernel_failed(m, step, rc);
  return err_set(&m->err, LOOM_ERR_RUNTIME, "run entry \"%s\" refused its arguments: argument %d: %s (code %d)",
                 s->run_entry, (int)LOOM_KERNEL_ERR_ARG(rc), kernel_err_kind_name(LOOM_KERNEL_ERR_KIND(rc)), (int)rc);
}

/* Dynamic outputs: the kernels wrote their real shapes; trust none beyond
 * the upper bound the buffer was sized for. */
static loom_status check_extents(loom_model *m) {
  const ArtifactSpec *s = &m->art->spec;
  for (int32_t i = 0; i < s->num_outputs; i++) {
    if (!m->out_shapes[i]) continue;
    for (int32_t d = 0; d < s->outputs[i].ndim; d++) {
      int64_t e = m->out_shapes[i][d], ub = s->outputs[i].shape[d];
      if (e < 0 || e > ub) {
        memcpy(m->out_shapes[i], s->outputs[i].shape, sizeof(int64_t) * (size_t)s->outputs[i].ndim);
        return err_set(&m->err, LOOM_ERR_RUNTIME,
                       "output \"%s\": the kernels reported extent %lld for axis %d, outside its bound [0, %lld]",
                       s->outputs[i].name, (long long)e, (int)d, (long long)ub);
      }
    }
  }
  return LOOM_OK;
}

static loom_status run_plan(loom_model *m, const loom_kernel_env *env);

loom_status loom_model_run(loom_model *m) {
  const ArtifactSpec *s = &m->art->spec;
  for (int32_t i = 0; i < s->num_inputs; i++)
    if (!m->input_set[i])
      return err_set(&m->err, LOOM_ERR_INVALID_ARG, "input \"%s\" was not set before running", s->inputs[i].name);
  loom_kernel_env env = {0};
  threadpool_fill_env(m->pool, &env);
  env.workspace = m->workspace;
  env.workspace_bytes = m->workspace_bytes;
  /* A dynamic output's shape array holds the upper bound on entry (the run
   * entry checks it); the kernels overwrite it with the real extents. */
  for (int32_t i = 0; i < s->num_outputs; i++)
    if (m->out_shapes[i])
      memcpy(m->out_shapes[i], s->outputs[i].shape, sizeof(int64_t) * (size_t)s->outputs[i].ndim);
  loom_status st = executor_uses_run_entry(m) ? run_entry(m, &env) : run_plan(m, &env);
  return st ? st : check_extents(m);
}

static loom_status run_plan(loom_model *m, const loom_kernel_env *env) {
  const ArtifactSpec *s = &m->art->spec;
  /* The plan: profiling times each call. */
  for (int32_t c = 0; c < s->num_calls; c++) {
    const ArtifactCall *call = &s->calls[c];
    const Kernel *k = &m->art->kernels[call->kernel];
    double t0 = m->profiling ? loom_clock_ms() : 0;
    int32_t rc = k->fn(m->arg_ptrs + m->arg_start[c], call->num_args, env);
    if (m->profiling) {
      m->prof_ms[c] += loom_clock_ms() - t0;
      m->prof_runs[c]++;
    }
    if (rc != 0) return kernel_failed(m, c, rc);
  }
  return LOOM_OK;
}

loom_status loom_model_get_output(loom_model *m, int32_t index, DLTensor *out) {
  const ArtifactSpec *s = &m->art->spec;
  if (index < 0 || index >= s->num_outputs)
    return err_set(&m->err, LOOM_ERR_INVALID_ARG, "output index %d out of range: the model has %d outputs", (int)index,
                   (int)s->num_outputs);
  memset(out, 0, sizeof *out);
  out->data = m->io_tensors[s->num_inputs + index].data; /* the model's buffer, or the one bound */
  out->device.device_type = kDLCPU;
  out->ndim = s->outputs[index].ndim;
  out->dtype = s->outputs[index].dtype;
  out->shape = m->out_shapes[index] ? m->out_shapes[index] : (int64_t *)s->outputs[index].shape;
  return LOOM_OK;
}

void loom_model_set_profiling(loom_model *m, bool enable) { m->profiling = enable; }

void loom_model_profile_reset(loom_model *m) {
  size_t n = (size_t)m->art->spec.num_calls;
  memset(m->prof_ms, 0, n * sizeof *m->prof_ms);
  memset(m->prof_runs, 0, n * sizeof *m->prof_runs);
}

int32_t loom_model_profile_count(const loom_model *m) { return m->art->spec.num_calls; }

loom_status loom_model_profile_entry(const loom_model *m, int32_t index, loom_profile_entry *out) {
  if (index < 0 || index >= m->art->spec.num_calls) return LOOM_ERR_INVALID_ARG;
  const ArtifactKernel *k = &m->art->spec.kernels[m->art->spec.calls[index].kernel];
  out->kernel = k->name;
  out->num_nodes = k->num_nodes;
  out->nodes = k->nodes;
  out->calls = m->prof_runs[index];
  out->total_ms = m->prof_ms[index];
  out->flops = k->flops;
  out->backend = k->backend;
  return LOOM_OK;
}
