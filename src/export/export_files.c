/* The project's build files and example program: Makefile, CMakeLists.txt
 * and example_main.c (reads each input from a .npy file, and the weights
 * file when there is one, runs, writes each output as OUT_DIR/<output
 * field>.npy). The example has its own small .npy code so the project needs
 * nothing of Loom. */
#include "export/export.h"

#include <inttypes.h>

/* The objects of the library: PREFIX.o, and PREFIX_weights.o when embedded. */
static void lib_objects(const ExportModel *m, StrBuf *o) {
  sb_printf(o, "%s.o", m->prefix);
  if (!m->weights_file) sb_printf(o, " %s_weights.o", m->prefix);
}

void export_makefile(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix;
  bool threads = m->threads > 1;
  sb_printf(o,
            "# %s: built by `make` (CC, CFLAGS and LDFLAGS as usual; Loom export-c, target %s).\n"
            "CC %s %s\n"
            "CFLAGS ?=\n"
            "TARGET_CFLAGS = %s%s\n"
            "ALL_CFLAGS = -std=c11 $(TARGET_CFLAGS) $(CFLAGS)\n"
            "LIBS = -lm%s\n"
            "OBJS = ",
            P, m->target, m->cross_cc ? "=" : "?=", m->cross_cc ? m->cross_cc : "cc", m->cflags,
            threads ? " -pthread" : "", threads ? " -pthread" : "");
  lib_objects(m, o);
  sb_printf(o, "\n\nall: example_main%s%s%s\n\n", m->bench ? " " : "", m->bench ? P : "", m->bench ? "_bench" : "");
  sb_printf(o, "%s.o: %s.c %s.h\n\t$(CC) $(ALL_CFLAGS) -c -o $@ %s.c\n\n", P, P, P, P);
  if (!m->weights_file)
    sb_printf(o, "%s_weights.o: %s_weights.c\n\t$(CC) $(ALL_CFLAGS) -c -o $@ %s_weights.c\n\n", P, P, P);
  sb_printf(o,
            "example_main.o: example_main.c %s.h\n\t$(CC) $(ALL_CFLAGS) -c -o $@ example_main.c\n\n"
            "example_main: example_main.o $(OBJS)\n"
            "\t$(CC) $(LDFLAGS) -o $@ example_main.o $(OBJS) $(LIBS)\n\n",
            P);
  if (m->bench)
    sb_printf(o,
              "%s_bench.o: %s_bench.c %s.h\n\t$(CC) $(ALL_CFLAGS) -c -o $@ %s_bench.c\n\n"
              "%s_bench: %s_bench.o $(OBJS)\n"
              "\t$(CC) $(LDFLAGS) -o $@ %s_bench.o $(OBJS) $(LIBS)\n\n"
              "bench: %s_bench\n\n",
              P, P, P, P, P, P, P, P);
  sb_printf(o, "clean:\n\trm -f example_main%s%s%s *.o\n\n.PHONY: all clean%s\n", m->bench ? " " : "",
            m->bench ? P : "", m->bench ? "_bench" : "", m->bench ? " bench" : "");
}

void export_cmakelists(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix;
  sb_printf(o,
            "# %s (Loom export-c, target %s): the library %s and example_main%s.\n"
            "cmake_minimum_required(VERSION 3.13)\n"
            "project(%s C)\n"
            "set(CMAKE_C_STANDARD 11)\n"
            "set(CMAKE_C_STANDARD_REQUIRED ON)\n"
            "add_library(%s STATIC %s.c%s%s%s)\n"
            "target_include_directories(%s PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n"
            "separate_arguments(%s_TARGET_CFLAGS UNIX_COMMAND \"%s\")\n"
            "target_compile_options(%s PRIVATE ${%s_TARGET_CFLAGS})\n"
            "find_library(%s_LIBM m)\n"
            "if(%s_LIBM)\n  target_link_libraries(%s PUBLIC ${%s_LIBM})\nendif()\n",
            P, m->target, P, m->bench ? " and the benchmark" : "", P, P, P, m->weights_file ? "" : " ",
            m->weights_file ? "" : P, m->weights_file ? "" : "_weights.c", P, P, m->cflags, P, P, P, P, P, P);
  if (m->threads > 1)
    sb_printf(o,
              "set(THREADS_PREFER_PTHREAD_FLAG ON)\n"
              "find_package(Threads REQUIRED)\n"
              "target_link_libraries(%s PUBLIC Threads::Threads)\n",
              P);
  if (m->cross_cc) sb_puts(o, "# another ISA: configure with -DCMAKE_C_COMPILER=<its cross compiler>\n");
  sb_printf(o, "add_executable(example_main example_main.c)\ntarget_link_libraries(example_main PRIVATE %s)\n", P);
  if (m->bench)
    sb_printf(o, "add_executable(%s_bench %s_bench.c)\ntarget_link_libraries(%s_bench PRIVATE %s)\n", P, P, P, P);
}

/* The example's fixed part: .npy read/write for little-endian, C-order
 * arrays of one dtype, and the main loop over the tables the generated part
 * defines (k_tensors). */
static const char k_example_npy[] =
    "static int fail(const char *what, const char *path) {\n"
    "  fprintf(stderr, \"example_main: %s: %s\\n\", path, what);\n"
    "  return 1;\n"
    "}\n\n"
    "/* Reads a version 1/2 .npy of t's descr and element count into data. */\n"
    "static int read_npy(const char *path, const ExampleTensor *t, void *data) {\n"
    "  FILE *f = fopen(path, \"rb\");\n"
    "  if (!f) return fail(\"cannot open\", path);\n"
    "  unsigned char pre[12];\n"
    "  int rc = 1;\n"
    "  char header[4096];\n"
    "  size_t hlen = 0, pre_len = 10;\n"
    "  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, \"\\x93NUMPY\", 6)) goto out;\n"
    "  if (pre[6] == 1) {\n"
    "    hlen = (size_t)pre[8] | (size_t)pre[9] << 8;\n"
    "  } else {\n"
    "    if (fread(pre + 10, 1, 2, f) != 2) goto out;\n"
    "    hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;\n"
    "    pre_len = 12;\n"
    "  }\n"
    "  (void)pre_len;\n"
    "  if (hlen >= sizeof header || fread(header, 1, hlen, f) != hlen) goto out;\n"
    "  header[hlen] = '\\0';\n"
    "  char want[32];\n"
    "  snprintf(want, sizeof want, \"'%s'\", t->descr);\n"
    "  if (!strstr(header, want)) {\n"
    "    fprintf(stderr, \"example_main: %s: expected dtype %s (%s)\\n\", path, t->dtype, t->descr);\n"
    "    fclose(f);\n"
    "    return 1;\n"
    "  }\n"
    "  if (strstr(header, \"'fortran_order': True\")) goto out;\n"
    "  /* the element count of the shape tuple must be the tensor's */\n"
    "  const char *p = strstr(header, \"'shape':\");\n"
    "  p = p ? strchr(p, '(') : NULL;\n"
    "  if (!p) goto out;\n"
    "  unsigned long long n = 1;\n"
    "  for (p++; *p && *p != ')';) {\n"
    "    char *end;\n"
    "    unsigned long long d = strtoull(p, &end, 10);\n"
    "    if (end == p) { p++; continue; }\n"
    "    n *= d;\n"
    "    p = end;\n"
    "  }\n"
    "  if (n != t->numel) {\n"
    "    fprintf(stderr, \"example_main: %s: %llu elements, expected %llu\\n\", path, n, t->numel);\n"
    "    fclose(f);\n"
    "    return 1;\n"
    "  }\n"
    "  if (fread(data, t->elem_bytes, (size_t)t->numel, f) != t->numel) goto out;\n"
    "  rc = 0;\n"
    "out:\n"
    "  fclose(f);\n"
    "  return rc ? fail(\"not a readable C-order .npy file\", path) : 0;\n"
    "}\n\n"
    "static int write_npy(const char *path, const ExampleTensor *t, const void *data) {\n"
    "  char header[512];\n"
    "  int n = snprintf(header, sizeof header, \"{'descr': '%s', 'fortran_order': False, 'shape': (\", t->descr);\n"
    "  for (int d = 0; d < t->ndim; d++)\n"
    "    n += snprintf(header + n, sizeof header - (size_t)n, \"%lld%s\", t->shape[d],\n"
    "                  t->ndim == 1 ? \",\" : d + 1 < t->ndim ? \", \" : \"\");\n"
    "  n += snprintf(header + n, sizeof header - (size_t)n, \"), }\");\n"
    "  /* pad with spaces so the data starts at a multiple of 64 bytes */\n"
    "  while ((10 + n + 1) % 64 != 0) header[n++] = ' ';\n"
    "  header[n++] = '\\n';\n"
    "  FILE *f = fopen(path, \"wb\");\n"
    "  if (!f) return fail(\"cannot create\", path);\n"
    "  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff),\n"
    "                           (unsigned char)(n >> 8)};\n"
    "  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)n, f) == (size_t)n &&\n"
    "           fwrite(data, t->elem_bytes, (size_t)t->numel, f) == t->numel;\n"
    "  if (fclose(f) != 0) ok = 0;\n"
    "  return ok ? 0 : fail(\"write failed\", path);\n"
    "}\n\n";

static void tensor_row(StrBuf *o, const ExportTensor *t) {
  sb_printf(o, "    {\"%s\", \"%s\", \"%s\", \"%s\", %d, {", t->name, t->field, t->dtype, t->npy, (int)t->ndim);
  for (int32_t d = 0; d < t->ndim; d++) sb_printf(o, "%s%" PRId64, d ? ", " : "", t->shape[d]);
  if (t->ndim == 0) sb_puts(o, "0");
  sb_printf(o, "}, %" PRIu64 "ULL, %u},\n", t->numel, t->dl.bits / 8u);
}

void export_example_main(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix, *U = m->upper;
  const ArtifactSpec *s = m->spec;
  int32_t ni = s->num_inputs, no = s->num_outputs, maxnd = 1;
  for (int32_t i = 0; i < ni + no; i++) {
    int32_t nd = i < ni ? m->inputs[i].ndim : m->outputs[i - ni].ndim;
    if (nd > maxnd) maxnd = nd;
  }
  sb_printf(o,
            "/* Runs %s once: example_main %sIN.npy... OUT_DIR (one .npy per input, in\n"
            " * the order of %s.h) writes OUT_DIR/<output>.npy for every output.\n"
            " * Generated by Loom export-c; edit freely. */\n"
            "#include \"%s.h\"\n\n"
            "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
            "typedef struct ExampleTensor {\n"
            "  const char *name, *field, *dtype, *descr;\n"
            "  int ndim;\n"
            "  long long shape[%d];\n"
            "  unsigned long long numel;\n"
            "  size_t elem_bytes;\n"
            "} ExampleTensor;\n\n",
            P, m->weights_file ? "WEIGHTS_FILE " : "", P, P, (int)maxnd);
  sb_puts(o, "static const ExampleTensor k_tensors[] = {\n");
  for (int32_t i = 0; i < ni; i++) tensor_row(o, &m->inputs[i]);
  for (int32_t i = 0; i < no; i++) tensor_row(o, &m->outputs[i]);
  sb_puts(o, "};\n\n");
  sb_puts(o, k_example_npy);
  if (m->weights_file) export_read_weights_function(m, o);
  /* argv: [WEIGHTS_FILE] inputs... OUT_DIR; data: inputs, outputs, workspace, [weights] */
  sb_printf(o,
            "int main(int argc, char **argv) {\n"
            "  enum { NI = %d, NO = %d, FIRST = %d };\n"
            "  if (argc != FIRST + NI + 1) {\n"
            "    fprintf(stderr, \"usage: %%s%s",
            (int)ni, (int)no, m->weights_file ? 2 : 1, m->weights_file ? " WEIGHTS_FILE" : "");
  for (int32_t i = 0; i < ni; i++) sb_printf(o, " %s.npy", m->inputs[i].field);
  sb_printf(o,
            " OUT_DIR\\n\", argv[0]);\n"
            "    return 2;\n"
            "  }\n"
            "  void *data[NI + NO + 2] = {0};\n"
            "  int rc = 1, st = %s_OK;\n"
            "  for (int i = 0; i < NI + NO; i++)\n"
            "    if (!(data[i] = malloc(k_tensors[i].numel * k_tensors[i].elem_bytes + 1))) goto done;\n"
            "  for (int i = 0; i < NI; i++)\n"
            "    if (read_npy(argv[FIRST + i], &k_tensors[i], data[i])) goto done;\n"
            "  %s_inputs in;\n  %s_outputs out;\n  memset(&in, 0, sizeof in);\n  memset(&out, 0, sizeof out);\n",
            U, P, P);
  for (int32_t i = 0; i < ni; i++) sb_printf(o, "  in.%s = data[%d];\n", m->inputs[i].field, (int)i);
  for (int32_t i = 0; i < no; i++) sb_printf(o, "  out.%s = data[%d];\n", m->outputs[i].field, (int)(ni + i));
  sb_printf(o,
            "  size_t ws_bytes = (%s_WORKSPACE_BYTES + 63) / 64 * 64;\n"
            "  data[NI + NO] = aligned_alloc(%s_WORKSPACE_ALIGN, ws_bytes);\n"
            "  if (!data[NI + NO]) goto done;\n",
            U, U);
  if (m->weights_file)
    sb_printf(o,
              "  size_t weights_size = 0;\n"
              "  %s_weights weights;\n"
              "  if (!(data[NI + NO + 1] = read_weights(argv[1], &weights_size))) {\n"
              "    fprintf(stderr, \"example_main: %%s: cannot read\\n\", argv[1]);\n"
              "    goto done;\n"
              "  }\n"
              "  if ((st = %s_weights_bind(&weights, data[NI + NO + 1], weights_size)) != %s_OK) {\n"
              "    fprintf(stderr, \"example_main: %%s: %%s\\n\", argv[1], %s_status_string(st));\n"
              "    goto done;\n"
              "  }\n",
              P, P, U, P);
  if (m->threads > 1)
    sb_printf(o,
              "  static %s_context ctx;\n"
              "  if ((st = %s_context_init(&ctx)) != %s_OK) goto failed;\n"
              "  st = %s_run(&in, &out, data[NI + NO]%s, &ctx);\n"
              "  %s_context_destroy(&ctx);\n",
              P, P, U, P, m->weights_file ? ", &weights" : "", P);
  else
    sb_printf(o, "  st = %s_run(&in, &out, data[NI + NO]%s);\n", P, m->weights_file ? ", &weights" : "");
  sb_printf(o,
            "  if (st != %s_OK) goto failed;\n"
            "  for (int i = 0; i < NO; i++) {\n"
            "    ExampleTensor t = k_tensors[NI + i];\n",
            U);
  /* an output with a data-dependent shape: the run's real shape, not the bound */
  for (int32_t i = 0; i < no; i++)
    if (m->outputs[i].dynamic)
      sb_printf(o,
                "    if (i == %d) {\n"
                "      t.numel = 1;\n"
                "      for (int d = 0; d < t.ndim; d++)\n"
                "        t.numel *= (unsigned long long)(t.shape[d] = out.%s_shape[d]);\n"
                "    }\n",
                (int)i, m->outputs[i].field);
  sb_printf(o,
            "    char path[4096];\n"
            "    snprintf(path, sizeof path, \"%%s/%%s.npy\", argv[FIRST + NI], t.field);\n"
            "    if (write_npy(path, &t, data[NI + i])) goto done;\n"
            "  }\n"
            "  rc = 0;\n"
            "  goto done;\n"
            "failed:\n"
            "  fprintf(stderr, \"example_main: %s_run: %%s\\n\", %s_status_string(st));\n"
            "done:\n"
            "  if (rc) fprintf(stderr, \"example_main: failed\\n\");\n"
            "  for (int i = 0; i < NI + NO + 2; i++) free(data[i]);\n"
            "  return rc;\n"
            "}\n",
            P, P);
}
