/* The compiled artifact `model.loom`: one file holding everything a model
 * needs to run with the runtime alone (no compiler on the machine).
 *
 * Layout (all integers little-endian; docs/runtime.md has the full table):
 *
 *   [0, 192)         header: magic "LOOMART\0", format version, header size,
 *                    Loom version, target ("x86_64-avx2-fma"), then
 *                    (offset, size) of the three sections, the file size, a
 *                    CRC-32 of each section, and last a CRC-32 of the header
 *                    bytes before it
 *   metadata         JSON (schema below), NUL-free, not NUL-terminated
 *   weights blob     64-byte aligned; every weight at a 64-byte aligned offset
 *   shared object    the kernels, built for `target`
 * The bytes between sections are zero.
 *
 * Metadata (format version 2; the same as version 1's):
 *   { "inputs":  [{"name", "dtype", "shape"}],          graph inputs, in order
 *     "outputs": [{"name", "dtype", "shape"}],
 *     "weights": [{"name", "dtype", "shape", "offset"}], offset in the blob
 *     "kernels": [{"name", "nodes": ["onnx node", ...],   in call order
 *                  "flops": N,                 optional: FLOPs of one call
 *                  "backend": "cblas",         optional: an external back end wrote it
 *                  "runtime_entry": "f",       optional (with backend): its runtime
 *                  "blob": w}],                  and the weight holding its blob
 *     "arena_bytes": N, "intermediate_bytes": N,
 *     "plan": [{"kernel": k, "args": [ARG, ...]}],        the calls, in order
 *     "byoc_runtimes": [{"backend", "library"}],  optional: shared libraries
 *                          the kernels of external (BYOC) back ends call,
 *                          loaded (global symbols) before the kernels
 *     "run_entry": "loom_run",                 optional: the generated entry
 *     "run_entry_weight_offsets": [N, ...] }   with run_entry: the blob offset
 *                                              of each weight it assumes
 *   ARG = {"kind": "input"|"output"|"weight", "index": i, "dtype", "shape"}
 *       | {"kind": "arena", "offset": bytes, "dtype", "shape"}
 *       | {"kind": "output_shape", "index": i, "dtype": "int64", "shape": [ndim]}
 * An input/output/weight argument may view its tensor with another shape of
 * the same dtype and element count (a folded reshape).
 *
 * Dynamic extents: an output may carry "dynamic": true (NonZero, Unique...:
 * its extents depend on the data). Its "shape" is then an upper bound
 * (ndim >= 1); the buffer is that large, and a run leaves the real tensor
 * in it row-major from byte 0. Exactly the calls that compute it get an
 * "output_shape" argument: the output's shape array (i64[ndim]), where the
 * kernel writes the real extents; the runtime checks each against the
 * bound before reporting it (loom_model_get_output).
 *
 * The loader trusts nothing: the header's checksum, then every offset and
 * size against the file, every section's checksum, the JSON against the
 * schema, every plan reference against the tables, all before anything is
 * dlopen'ed. Damage anywhere is refused naming the section: a flipped bit in
 * the weights would otherwise silently change every answer, one in the .so
 * can crash the dynamic loader. With a run entry, loading also
 * resolves it and checks the plan hash baked into the .so against the one
 * recomputed from the metadata (artifact_run_hash). */
#ifndef LOOM_RUNTIME_ARTIFACT_H
#define LOOM_RUNTIME_ARTIFACT_H

#include "runtime/module.h"
#include "support/arena.h"
#include "support/error.h"

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARTIFACT_MAGIC "LOOMART" /* 8 bytes with the NUL */
enum {
  ARTIFACT_FORMAT_VERSION = 2, /* 2: a CRC-32 per section and of the header (1: one FNV-1a of metadata and .so) */
  ARTIFACT_HEADER_BYTES = 192,
  ARTIFACT_ALIGN = 64,
  ARTIFACT_MAX_NAME = 255, /* bytes in a tensor, kernel or node name */
  ARTIFACT_MAX_DIMS = 32,
};
/* The Loom release writing artifacts; loading needs the same major.minor. */
#define LOOM_VERSION_STRING "0.2.0"

typedef struct ArtifactTensor {
  const char *name;
  DLDataType dtype;
  int32_t ndim;
  const int64_t *shape;
  uint64_t nbytes; /* loader: computed; writer: ignored */
  bool dynamic;    /* outputs only: shape is an upper bound, the real one is written by an output_shape argument */
} ArtifactTensor;

typedef struct ArtifactWeight {
  ArtifactTensor t;
  const void *data; /* writer: the bytes (t.nbytes from dtype and shape); loader: into the file */
  uint64_t offset;  /* loader: offset in the weights blob (the writer assigns offsets itself) */
} ArtifactWeight;

typedef enum ArtifactArgKind {
  ARTIFACT_ARG_INPUT,
  ARTIFACT_ARG_OUTPUT,
  ARTIFACT_ARG_WEIGHT,
  ARTIFACT_ARG_ARENA,
  ARTIFACT_ARG_OUTPUT_SHAPE, /* index: a dynamic output; the tensor is i64[its ndim], its shape array */
} ArtifactArgKind;

typedef struct ArtifactArg {
  ArtifactArgKind kind;
  int32_t index;   /* input/output/weight index */
  uint64_t offset; /* arena byte offset */
  /* The tensor the kernel sees. Writer: required for arena arguments; for
   * the others `view` false means the source tensor's dtype and shape. The
   * loader always fills them (view tells whether they differ). */
  bool view;
  DLDataType dtype;
  int32_t ndim;
  const int64_t *shape;
} ArtifactArg;

typedef struct ArtifactKernel {
  const char *name; /* the exported symbol: a C identifier */
  int32_t num_nodes;
  const char *const *nodes; /* ONNX node names fused into it (profiling) */
  /* Floating-point operations of one call (tir_func_flops of its compute
   * definition, src/tir/flops.h), for the profile's GFLOP/s; 0 = unknown
   * (the metadata then has no "flops" key). At most 2^53. */
  uint64_t flops;
  /* NULL: Loom's own kernel; else the BYOC back end whose code it is
   * (src/byoc; the profile marks it). */
  const char *backend;
  /* NULL, or (a kernel of `backend` in the blob form, loom/loom_byoc.h)
   * the function of the back end's runtime library returning its
   * loom_byoc_runtime; weights[blob] is the blob init receives. */
  const char *runtime_entry;
  int32_t blob;
} ArtifactKernel;

/* A shared library that external kernels call, loaded with global symbols
 * before the kernels' object (which leaves its symbols undefined). */
typedef struct ArtifactByocRuntime {
  const char *backend; /* the back end that needs it */
  const char *library; /* a dlopen name ("libopenblas.so.0") or path */
} ArtifactByocRuntime;

typedef struct ArtifactCall {
  int32_t kernel; /* index into kernels */
  int32_t num_args;
  const ArtifactArg *args;
} ArtifactCall;

/* What the compiler hands to artifact_write (src/artifact_write), and what
 * artifact_parse gives back (then every pointer is into the Artifact's arena
 * or the file image). */
typedef struct ArtifactSpec {
  const char *target;       /* NULL: artifact_host_target() */
  const char *loom_version; /* NULL: LOOM_VERSION_STRING (tests set others) */
  int32_t num_inputs, num_outputs, num_weights, num_kernels, num_calls;
  const ArtifactTensor *inputs;
  const ArtifactTensor *outputs;
  const ArtifactWeight *weights;
  const ArtifactKernel *kernels;
  const ArtifactCall *calls;
  int32_t num_byoc_runtimes;
  const ArtifactByocRuntime *byoc_runtimes;
  uint64_t arena_bytes;
  uint64_t intermediate_bytes; /* sum of intermediate sizes before planning */
  /* The shared object: bytes in memory, or a file to copy (so_bytes NULL). */
  const void *so_bytes;
  size_t so_size;
  const char *so_path;
  /* The generated run entry (loom_kernel.h, loom_run_fn): its symbol, NULL or
   * "" when the shared object has none (the plan is then the only way to
   * run), and the weight offsets in the blob it was generated for (one per
   * weight; they must equal artifact_weight_layout's, which the writer
   * uses). */
  const char *run_entry;
  const uint64_t *run_entry_weight_offsets;
} ArtifactSpec;

typedef struct Artifact {
  uint32_t format_version;
  char loom_version[33];
  char target[65];
  ArtifactSpec spec;          /* tables, arena size, so_bytes/so_size into the image */
  const uint8_t *weights;     /* the blob, into the image */
  uint64_t weights_size;
  uint64_t meta_offset, meta_size, weights_offset, so_offset, file_size;
  Arena *arena;               /* owns the tables */
  void *map;                  /* artifact_load: the mmap'ed file */
  size_t map_len;
  Module *module;             /* artifact_load: the loaded kernels */
  void **byoc_handles;        /* artifact_load: the loaded spec.byoc_runtimes */
  int32_t num_byoc_handles;
  /* artifact_load: per kernel with a runtime_entry, the back end's runtime
   * (const loom_byoc_runtime *) and the state its init returned */
  const void **external_runtimes;
  void **external_states;
  /* Where the .so bytes live while loaded. glibc's dlopen returns an already
   * loaded object whose name matches, so the name must stay unique while the
   * module is loaded: the memfd stays open (its /proc/self/fd/N cannot be
   * reused), the fallback temporary file stays until artifact_free. */
  int so_fd;
  char *so_tmp_path;
  Kernel *kernels;            /* spec.num_kernels, resolved */
  uint64_t run_hash;          /* artifact_run_hash of the parsed plan (run_entry set) */
  loom_run_fn run_fn;           /* artifact_load: the resolved run entry, NULL when none */
} Artifact;

enum {
  ARTIFACT_SKIP_TARGET_CHECK = 1,   /* inspect, and the writer's self-check */
  ARTIFACT_SKIP_CHECKSUM = 2,       /* no CRC checks (tests that damage fields on purpose) */
  ARTIFACT_SKIP_VERSION_CHECK = 4,  /* inspect shows what it can */
  ARTIFACT_NO_MEMFD = 8,            /* artifact_load: use the temporary-file path (tests) */
};

/* Validates an in-memory image (not copied: it must outlive the result).
 * `what` names it in messages. Errors: LOOM_ERR_PARSE (damaged: a checksum
 * mismatch naming the section; truncated, extra bytes, schema),
 * LOOM_ERR_UNSUPPORTED (format version, Loom version or target mismatch: the
 * message names both sides). */
loom_status artifact_parse(const void *image, size_t len, const char *what, int flags, Artifact **out,
                           LoomError *err);
/* mmap + artifact_parse + load the libraries of spec.byoc_runtimes (a
 * missing one is LOOM_ERR_IO naming the back end and the library) + load
 * the .so (memfd, else a private temp file) and resolve every kernel; for
 * a kernel with a runtime_entry, the back end's runtime is found, its init
 * run on the blob and the kernel's weights, and NAME_external filled in
 * (failures name the back end and the kernel). */
loom_status artifact_load(const char *path, int flags, Artifact **out, LoomError *err);
/* artifact_load whose external kernels' init gets num_threads (a model's
 * thread count; <= 0: threadpool_default_threads()). */
loom_status artifact_load_threads(const char *path, int flags, int num_threads, Artifact **out, LoomError *err);
void artifact_free(Artifact *a);

/* "x86_64-avx2-fma-avx512" style: the arch and the known ISA features this
 * CPU has, into buf (truncated to len). Returns buf. */
char *artifact_host_target(char *buf, size_t len);
/* LOOM_OK when code built for `target` runs here; else LOOM_ERR_UNSUPPORTED
 * naming what is missing. */
loom_status artifact_check_target(const char *target, LoomError *err);

const char *artifact_arg_kind_name(ArtifactArgKind k);

/* ---- artifact_byoc.c: external (BYOC) kernels at load time ---- */
/* dlopen (global symbols) every library of spec.byoc_runtimes, before the
 * kernels' object that calls into them. */
loom_status artifact_load_byoc_runtimes(Artifact *art, const char *what, LoomError *err);
/* For every kernel with a runtime_entry: its back end's loom_byoc_runtime
 * (looked up in that back end's runtime library), init on the blob and the
 * weights of the kernel's call and num_threads (>= 1), NAME_external
 * filled in. */
loom_status artifact_init_external_kernels(Artifact *art, const char *what, int num_threads, LoomError *err);
/* release() of every state init returned; NULL-safe parts. */
void artifact_release_external_kernels(Artifact *art);

/* ---- artifact_run.c: what the run entry and the writer must agree on ---- */

/* The weights blob layout artifact_write uses: weight i at offsets[i] (each
 * 64-byte aligned, in table order), *blob_bytes in all. Deterministic in the
 * weights' dtypes and shapes only, so the compiler can compute it before
 * writing. false (offsets unspecified) when a weight's dtype or shape is
 * invalid (artifact_write then names it). */
bool artifact_weight_layout(const ArtifactWeight *ws, int32_t n, uint64_t *offsets, uint64_t *blob_bytes);

/* The tensor an argument passes (a view's, or its source's when !view).
 * false when an input/output/weight index is out of range. */
bool artifact_arg_tensor(const ArtifactSpec *s, const ArtifactArg *a, DLDataType *dtype, int32_t *ndim,
                         const int64_t **shape);

/* FNV-1a 64 of everything a generated run entry hard-codes: the inputs' and
 * outputs' dtypes and shapes, the weights' offsets and sizes, the arena
 * size, and every call's kernel name and arguments (kind, index or offset,
 * dtype, shape). The compiler bakes it into the entry (NAME_plan_hash); the
 * loader recomputes it from the metadata and refuses a mismatch. */
uint64_t artifact_run_hash(const ArtifactSpec *s, const uint64_t *weight_offsets);

#endif
