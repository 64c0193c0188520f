#include "support/strbuf.h"
#include "support/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(StrBuf *sb) { memset(sb, 0, sizeof *sb); }

void sb_free(StrBuf *sb) {
  loom_free(sb->data);
  sb_init(sb);
}

static void sb_reserve(StrBuf *sb, size_t extra) {
  if (sb->len + extra + 1 <= sb->cap) return;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < sb->len + extra + 1) cap *= 2;
  char *p = loom_realloc(sb->data, cap);
  if (!p) {
    fprintf(stderr, "loom: out of memory growing a string to %zu bytes\n", cap);
    abort();
  }
  sb->data = p;
  sb->cap = cap;
}

void sb_putc(StrBuf *sb, char c) {
  sb_reserve(sb, 1);
  sb->data[sb->len++] = c;
  sb->data[sb->len] = 0;
}

void sb_puts(StrBuf *sb, const char *s) {
  size_t n = strlen(s);
  sb_reserve(sb, n);
  memcpy(sb->data + sb->len, s, n + 1);
  sb->len += n;
}

void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n <= 0) return;
  sb_reserve(sb, (size_t)n);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
}

void sb_printf(StrBuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(sb, fmt, ap);
  va_end(ap);
}

void sb_indent(StrBuf *sb, int level) {
  for (int i = 0; i < level; i++) sb_puts(sb, "  ");
}

char *sb_take(StrBuf *sb) {
  char *p = sb->data;
  if (!p) {
    p = loom_malloc(1);
    if (!p) abort();
    p[0] = 0;
  }
  sb_init(sb);
  return p;
}

const char *sb_cstr(StrBuf *sb) { return sb->data ? sb->data : ""; }
