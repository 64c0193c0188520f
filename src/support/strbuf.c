#include "support/strbuf.h"
#include "support/alloc.h"
#include "support/oom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The buffer starts with an OomNode, so that a recovery point frees it
 * when memory runs out mid-entry (support/oom.h); sb->data points past it. */
static OomNode *header_of(char *data) { return (OomNode *)(void *)data - 1; }
static void release_buffer(OomNode *n) {
  oom_untrack(n);
  loom_free(n);
}

void sb_init(StrBuf *sb) { memset(sb, 0, sizeof *sb); }

void sb_free(StrBuf *sb) {
  if (sb->data) {
    OomNode *h = header_of(sb->data);
    oom_untrack(h);
    loom_free(h);
  }
  sb_init(sb);
}

static void sb_reserve(StrBuf *sb, size_t extra) {
  if (sb->len + extra + 1 <= sb->cap) return;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < sb->len + extra + 1) cap *= 2;
  OomNode *old = sb->data ? header_of(sb->data) : NULL, saved = {0};
  if (old) saved = *old;
  OomNode *h = loom_realloc(old, sizeof(OomNode) + cap);
  if (!h) {
    sb_free(sb);
    oom_raise("a string of %zu bytes", cap);
  }
  if (old) oom_retrack(h, &saved);
  else oom_track(h, release_buffer);
  sb->data = (char *)(h + 1);
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
  /* A plain copy: the caller frees it with free(), which knows no header. */
  char *p = loom_malloc(sb->len + 1);
  if (!p) oom_raise("a string of %zu bytes", sb->len + 1);
  if (sb->data) memcpy(p, sb->data, sb->len + 1);
  else p[0] = 0;
  sb_free(sb);
  return p;
}

const char *sb_cstr(StrBuf *sb) { return sb->data ? sb->data : ""; }
