/* Growable heap string for printers and code generators. */
#ifndef LOOM_SUPPORT_STRBUF_H
#define LOOM_SUPPORT_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct StrBuf {
  char *data; /* always NUL-terminated once anything was written */
  size_t len, cap;
} StrBuf;

void sb_init(StrBuf *sb);
void sb_free(StrBuf *sb);
void sb_putc(StrBuf *sb, char c);
void sb_puts(StrBuf *sb, const char *s);
void sb_printf(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap);
void sb_indent(StrBuf *sb, int level); /* two spaces per level */
/* Hands the string over as a fresh copy (caller frees); sb is reset to
 * empty. */
char *sb_take(StrBuf *sb);
const char *sb_cstr(StrBuf *sb); /* "" if empty */

#endif
