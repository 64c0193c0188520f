/* Writing an artifact (called by the graph compiler). The spec is checked
 * enough to build the JSON safely; the written file is then read back with
 * artifact_parse before it is renamed into place, so the writer can never
 * produce an artifact the loader refuses. */
#include "artifact_write/artifact_write.h"

#include "runtime/artifact_checksum.h"
#include "runtime/artifact_format.h"
#include "runtime/dl_dtype.h"
#include "support/alloc.h"
#include "support/atomic_file.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

static cJSON *shape_json(int32_t ndim, const int64_t *shape) {
  cJSON *a = cJSON_CreateArray();
  for (int32_t i = 0; a && i < ndim; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)shape[i]));
  return a;
}

static loom_status check_tensor(const char *where, int i, DLDataType dtype, int32_t ndim, const int64_t *shape,
                                uint64_t *nbytes, LoomError *err) {
  if (!dl_dtype_name(dtype))
    return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: %s[%d]: unsupported dtype (code %d, %d bits, %d lanes)",
                   where, i, dtype.code, dtype.bits, dtype.lanes);
  if (ndim < 0 || ndim > ARTIFACT_MAX_DIMS || (ndim > 0 && !shape))
    return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: %s[%d]: ndim %d, expected 0..%d with a shape", where, i,
                   (int)ndim, ARTIFACT_MAX_DIMS);
  for (int32_t d = 0; d < ndim; d++)
    if (shape[d] < 0 || (uint64_t)shape[d] > ARTIFACT_MAX_INT)
      return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: %s[%d]: dimension %d is %lld", where, i, (int)d,
                     (long long)shape[d]);
  if (!dl_shape_bytes(shape, ndim, dl_dtype_bytes(dtype), ARTIFACT_MAX_BYTES, nbytes))
    return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: %s[%d]: tensor too large", where, i);
  return LOOM_OK;
}

static loom_status add_tensors(cJSON *root, const char *key, const ArtifactTensor *ts, int32_t n, LoomError *err) {
  cJSON *arr = cJSON_AddArrayToObject(root, key);
  for (int32_t i = 0; i < n; i++) {
    uint64_t nb;
    if (!ts[i].name) return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: %s[%d] has no name", key, (int)i);
    loom_status st = check_tensor(key, i, ts[i].dtype, ts[i].ndim, ts[i].shape, &nb, err);
    if (st) return st;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", ts[i].name);
    cJSON_AddStringToObject(o, "dtype", dl_dtype_name(ts[i].dtype));
    cJSON_AddItemToObject(o, "shape", shape_json(ts[i].ndim, ts[i].shape));
    if (ts[i].dynamic) cJSON_AddBoolToObject(o, "dynamic", 1);
    cJSON_AddItemToArray(arr, o);
  }
  return LOOM_OK;
}

static const ArtifactTensor *source_of(const ArtifactSpec *s, const ArtifactArg *a) {
  if (a->index < 0) return NULL;
  switch (a->kind) {
    case ARTIFACT_ARG_INPUT: return a->index < s->num_inputs ? &s->inputs[a->index] : NULL;
    case ARTIFACT_ARG_OUTPUT: return a->index < s->num_outputs ? &s->outputs[a->index] : NULL;
    case ARTIFACT_ARG_WEIGHT: return a->index < s->num_weights ? &s->weights[a->index].t : NULL;
    case ARTIFACT_ARG_OUTPUT_SHAPE: return a->index < s->num_outputs ? &s->outputs[a->index] : NULL;
    case ARTIFACT_ARG_ARENA: break;
  }
  return NULL;
}

/* The run entry hard-codes weight offsets: they must be the blob layout
 * this writer produces (artifact_weight_layout). */
static loom_status check_run_entry(const ArtifactSpec *s, const uint64_t *w_offsets, LoomError *err) {
  if (!s->run_entry || !*s->run_entry) return LOOM_OK;
  size_t n = strlen(s->run_entry);
  bool ident = n <= 100 && (isalpha((unsigned char)s->run_entry[0]) || s->run_entry[0] == '_');
  for (size_t i = 0; ident && i < n; i++) ident = isalnum((unsigned char)s->run_entry[i]) || s->run_entry[i] == '_';
  if (!ident)
    return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: run_entry \"%s\" is not a C identifier of at most 100 bytes",
                   s->run_entry);
  if (s->num_weights > 0 && !s->run_entry_weight_offsets)
    return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: run_entry \"%s\" without run_entry_weight_offsets",
                   s->run_entry);
  for (int32_t i = 0; i < s->num_weights; i++)
    if (s->run_entry_weight_offsets[i] != w_offsets[i])
      return err_set(err, LOOM_ERR_INVALID_ARG,
                     "artifact_write: run entry \"%s\" assumes weight \"%s\" at blob offset %llu, the writer puts it "
                     "at %llu",
                     s->run_entry, s->weights[i].t.name, (unsigned long long)s->run_entry_weight_offsets[i],
                     (unsigned long long)w_offsets[i]);
  return LOOM_OK;
}

static loom_status build_json(const ArtifactSpec *s, const uint64_t *w_offsets, char **out, LoomError *err) {
  cJSON *root = cJSON_CreateObject();
  loom_status st = add_tensors(root, "inputs", s->inputs, s->num_inputs, err);
  if (!st) st = add_tensors(root, "outputs", s->outputs, s->num_outputs, err);
  cJSON_AddNumberToObject(root, "arena_bytes", (double)s->arena_bytes);
  cJSON_AddNumberToObject(root, "intermediate_bytes", (double)s->intermediate_bytes);
  cJSON *ws = cJSON_AddArrayToObject(root, "weights");
  for (int32_t i = 0; !st && i < s->num_weights; i++) {
    const ArtifactWeight *w = &s->weights[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", w->t.name ? w->t.name : "");
    cJSON_AddStringToObject(o, "dtype", dl_dtype_name(w->t.dtype) ? dl_dtype_name(w->t.dtype) : "?");
    cJSON_AddItemToObject(o, "shape", shape_json(w->t.ndim, w->t.shape));
    cJSON_AddNumberToObject(o, "offset", (double)w_offsets[i]);
    cJSON_AddItemToArray(ws, o);
  }
  cJSON *ks = cJSON_AddArrayToObject(root, "kernels");
  for (int32_t i = 0; !st && i < s->num_kernels; i++) {
    const ArtifactKernel *k = &s->kernels[i];
    if (!k->name || (k->num_nodes > 0 && !k->nodes) || k->num_nodes < 0) {
      st = err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: kernels[%d]: missing name or node list", (int)i);
      break;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", k->name);
    cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
    for (int32_t j = 0; j < k->num_nodes; j++)
      cJSON_AddItemToArray(nodes, cJSON_CreateString(k->nodes[j] ? k->nodes[j] : ""));
    if (k->flops > ARTIFACT_MAX_INT) {
      st = err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: kernels[%d].flops: %llu is more than 2^53", (int)i,
                   (unsigned long long)k->flops);
      cJSON_Delete(o);
      break;
    }
    if (k->flops) cJSON_AddNumberToObject(o, "flops", (double)k->flops);
    if (k->backend) cJSON_AddStringToObject(o, "backend", k->backend);
    if (k->backend && k->runtime_entry) {
      cJSON_AddStringToObject(o, "runtime_entry", k->runtime_entry);
      cJSON_AddNumberToObject(o, "blob", k->blob);
    }
    cJSON_AddItemToArray(ks, o);
  }
  if (!st && s->num_byoc_runtimes > 0) {
    cJSON *rts = cJSON_AddArrayToObject(root, "byoc_runtimes");
    for (int32_t i = 0; i < s->num_byoc_runtimes; i++) {
      const ArtifactByocRuntime *rt = &s->byoc_runtimes[i];
      if (!rt->backend || !rt->library) {
        st = err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: byoc_runtimes[%d]: missing back end or library", (int)i);
        break;
      }
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "backend", rt->backend);
      cJSON_AddStringToObject(o, "library", rt->library);
      cJSON_AddItemToArray(rts, o);
    }
  }
  cJSON *plan = cJSON_AddArrayToObject(root, "plan");
  for (int32_t i = 0; !st && i < s->num_calls; i++) {
    const ArtifactCall *c = &s->calls[i];
    if (c->num_args < 0 || (c->num_args > 0 && !c->args)) {
      st = err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: plan[%d]: missing arguments", (int)i);
      break;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "kernel", c->kernel);
    cJSON *args = cJSON_AddArrayToObject(o, "args");
    cJSON_AddItemToArray(plan, o);
    for (int32_t j = 0; !st && j < c->num_args; j++) {
      const ArtifactArg *a = &c->args[j];
      cJSON *ao = cJSON_CreateObject();
      cJSON_AddItemToArray(args, ao);
      cJSON_AddStringToObject(ao, "kind", artifact_arg_kind_name(a->kind));
      DLDataType dtype = a->dtype;
      int32_t ndim = a->ndim;
      const int64_t *shape = a->shape;
      if (a->kind == ARTIFACT_ARG_ARENA) {
        cJSON_AddNumberToObject(ao, "offset", (double)a->offset);
      } else {
        const ArtifactTensor *src = source_of(s, a);
        if (!src) {
          st = err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: plan[%d].args[%d]: %s %d does not exist", (int)i,
                       (int)j, artifact_arg_kind_name(a->kind), (int)a->index);
          break;
        }
        cJSON_AddNumberToObject(ao, "index", a->index);
        if (!a->view && a->kind != ARTIFACT_ARG_OUTPUT_SHAPE) {
          dtype = src->dtype;
          ndim = src->ndim;
          shape = src->shape;
        }
      }
      uint64_t nb;
      char where[64];
      snprintf(where, sizeof where, "plan[%d].args", (int)i);
      if ((st = check_tensor(where, j, dtype, ndim, shape, &nb, err))) break;
      cJSON_AddStringToObject(ao, "dtype", dl_dtype_name(dtype));
      cJSON_AddItemToObject(ao, "shape", shape_json(ndim, shape));
    }
  }
  if (!st && s->run_entry && *s->run_entry) {
    cJSON_AddStringToObject(root, "run_entry", s->run_entry);
    cJSON *offs = cJSON_AddArrayToObject(root, "run_entry_weight_offsets");
    for (int32_t i = 0; i < s->num_weights; i++) cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)w_offsets[i]));
  }
  if (!st) {
    *out = cJSON_PrintUnformatted(root);
    if (!*out) st = err_set(err, LOOM_ERR_OUT_OF_MEMORY, "artifact_write: out of memory printing the metadata");
  }
  cJSON_Delete(root);
  return st;
}

static loom_status read_file(const char *path, void **data, size_t *len, LoomError *err) {
  *data = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return err_set(err, LOOM_ERR_IO, "artifact_write: cannot open shared object \"%s\": %s", path, strerror(errno));
  size_t cap = 1 << 16;
  char *buf = loom_malloc(cap);
  for (;;) {
    if (!buf) break;
    size_t got = fread(buf + *len, 1, cap - *len, f);
    *len += got;
    if (got == 0) break;
    if (*len == cap) {
      char *nb = loom_realloc(buf, cap * 2);
      if (!nb) {
        loom_free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  bool bad = !buf || ferror(f);
  fclose(f);
  if (bad) {
    loom_free(buf);
    return err_set(err, LOOM_ERR_IO, "artifact_write: cannot read shared object \"%s\"", path);
  }
  *data = buf;
  return LOOM_OK;
}

static void write_zeros(AtomicFile *af, uint64_t n) {
  static const uint8_t zeros[ARTIFACT_ALIGN];
  while (n) {
    size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
    atomic_file_write(af, zeros, k);
    n -= k;
  }
}

static uint32_t crc_zeros(uint32_t crc, uint64_t n) {
  static const uint8_t zeros[ARTIFACT_ALIGN];
  while (n) {
    size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
    crc = artifact_crc32(crc, zeros, k);
    n -= k;
  }
  return crc;
}

/* The CRC of the weights section as artifact_write lays it out: each weight,
 * then zeros to the next 64-byte boundary. */
static uint32_t weights_crc(const ArtifactSpec *s, const uint64_t *w_bytes) {
  uint32_t crc = 0;
  for (int32_t i = 0; i < s->num_weights; i++) {
    crc = artifact_crc32(crc, s->weights[i].data, w_bytes[i]);
    crc = crc_zeros(crc, artifact_align(w_bytes[i]) - w_bytes[i]);
  }
  return crc;
}

/* Reads the temporary back through the loader's own checks (no target check:
 * cross-compiled artifacts are written on another machine). */
static loom_status self_check(const char *tmp, const char *path, LoomError *err) {
  int fd = open(tmp, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_size <= 0) {
    close(fd);
    return err_set(err, LOOM_ERR_IO, "cannot write \"%s\"", path);
  }
  void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", path, strerror(errno));
  Artifact *art;
  loom_status st = artifact_parse(map, (size_t)sb.st_size, path, ARTIFACT_SKIP_TARGET_CHECK | ARTIFACT_SKIP_VERSION_CHECK, &art, err);
  if (st) err_prefix(err, "artifact_write: the written file does not validate");
  else artifact_free(art);
  munmap(map, (size_t)sb.st_size);
  return st;
}

loom_status artifact_write(const char *path, const ArtifactSpec *s, LoomError *err) {
  if (!s) return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: NULL spec");
  if (s->num_inputs < 0 || s->num_outputs < 0 || s->num_weights < 0 || s->num_kernels < 0 || s->num_calls < 0 ||
      (s->num_inputs && !s->inputs) || (s->num_outputs && !s->outputs) || (s->num_weights && !s->weights) ||
      (s->num_kernels && !s->kernels) || (s->num_calls && !s->calls))
    return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: a table count is negative or its array is NULL");
  char host[HDR_TARGET_LEN];
  const char *target = s->target ? s->target : artifact_host_target(host, sizeof host);
  const char *version = s->loom_version ? s->loom_version : LOOM_VERSION_STRING;
  if (!*target || strlen(target) >= HDR_TARGET_LEN)
    return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: target \"%s\" must have 1 to %d bytes", target,
                   HDR_TARGET_LEN - 1);
  if (!*version || strlen(version) >= HDR_LOOM_VERSION_LEN)
    return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: Loom version \"%s\" must have 1 to %d bytes", version,
                   HDR_LOOM_VERSION_LEN - 1);
  if (s->arena_bytes > ARTIFACT_MAX_BYTES || s->intermediate_bytes > ARTIFACT_MAX_INT)
    return err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: arena of %llu bytes is too large",
                   (unsigned long long)s->arena_bytes);

  /* Weights: 64-byte aligned offsets in one blob. */
  uint64_t *w_offsets = loom_calloc((size_t)s->num_weights + 1, sizeof *w_offsets);
  if (!w_offsets) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "artifact_write: out of memory");
  uint64_t blob = 0, *w_bytes = loom_calloc((size_t)s->num_weights + 1, sizeof *w_bytes);
  loom_status st = w_bytes ? LOOM_OK : err_set(err, LOOM_ERR_OUT_OF_MEMORY, "artifact_write: out of memory");
  for (int32_t i = 0; !st && i < s->num_weights; i++) {
    const ArtifactWeight *w = &s->weights[i];
    if (!w->t.name) st = err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: weights[%d] has no name", (int)i);
    if (!st) st = check_tensor("weights", i, w->t.dtype, w->t.ndim, w->t.shape, &w_bytes[i], err);
    if (!st && w_bytes[i] && !w->data)
      st = err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: weights[%d] \"%s\" has no data", (int)i, w->t.name);
  }
  if (!st && !artifact_weight_layout(s->weights, s->num_weights, w_offsets, &blob))
    st = err_set(err, LOOM_ERR_INTERNAL, "artifact_write: cannot lay out the weights blob");
  if (!st) st = check_run_entry(s, w_offsets, err);
  char *json = NULL;
  if (!st) st = build_json(s, w_offsets, &json, err);
  void *so_owned = NULL;
  const void *so = s->so_bytes;
  size_t so_size = s->so_size;
  if (!st && !so) {
    if (!s->so_path) st = err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: no shared object (bytes or path)");
    else st = read_file(s->so_path, &so_owned, &so_size, err);
    so = so_owned;
  }
  if (!st && so_size == 0) st = err_set(err, LOOM_ERR_INVALID_ARG, "artifact_write: the shared object is empty");

  if (!st) {
    uint64_t meta_size = strlen(json);
    uint64_t meta_off = ARTIFACT_HEADER_BYTES;
    uint64_t w_off = artifact_align(meta_off + meta_size);
    uint64_t so_off = artifact_align(w_off + blob);
    uint8_t hdr[ARTIFACT_HEADER_BYTES] = {0};
    memcpy(hdr + HDR_MAGIC, ARTIFACT_MAGIC, 8);
    hdr_put_u32(hdr + HDR_VERSION, ARTIFACT_FORMAT_VERSION);
    hdr_put_u32(hdr + HDR_HEADER_BYTES, ARTIFACT_HEADER_BYTES);
    memcpy(hdr + HDR_LOOM_VERSION, version, strlen(version));
    memcpy(hdr + HDR_TARGET, target, strlen(target));
    hdr_put_u64(hdr + HDR_META_OFFSET, meta_off);
    hdr_put_u64(hdr + HDR_META_SIZE, meta_size);
    hdr_put_u64(hdr + HDR_WEIGHTS_OFFSET, w_off);
    hdr_put_u64(hdr + HDR_WEIGHTS_SIZE, blob);
    hdr_put_u64(hdr + HDR_SO_OFFSET, so_off);
    hdr_put_u64(hdr + HDR_SO_SIZE, so_size);
    hdr_put_u64(hdr + HDR_FILE_SIZE, so_off + so_size);
    hdr_put_u32(hdr + HDR_META_CRC, artifact_crc32(0, json, meta_size));
    hdr_put_u32(hdr + HDR_WEIGHTS_CRC, weights_crc(s, w_bytes));
    hdr_put_u32(hdr + HDR_SO_CRC, artifact_crc32(0, so, so_size));
    hdr_put_u32(hdr + HDR_HEADER_CRC, artifact_header_crc(hdr));

    AtomicFile af;
    st = atomic_file_open(&af, path, err);
    if (!st) {
      atomic_file_write(&af, hdr, sizeof hdr);
      atomic_file_write(&af, json, meta_size);
      write_zeros(&af, w_off - (meta_off + meta_size));
      for (int32_t i = 0; i < s->num_weights; i++) {
        atomic_file_write(&af, s->weights[i].data, (size_t)w_bytes[i]);
        write_zeros(&af, artifact_align(w_bytes[i]) - w_bytes[i]);
      }
      write_zeros(&af, so_off - (w_off + blob));
      atomic_file_write(&af, so, so_size);
      if (af.failed || fflush(af.f) != 0) {
        st = err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", path, strerror(errno ? errno : EIO));
        atomic_file_abort(&af);
      } else if ((st = self_check(af.tmp, path, err))) {
        atomic_file_abort(&af);
      } else {
        st = atomic_file_commit(&af, err);
      }
    }
  }
  loom_free(json);
  loom_free(so_owned);
  loom_free(w_offsets);
  loom_free(w_bytes);
  return st;
}
