/* highlight: a fenced code block's text to HTML with its tokens in
 * <span class="hl-KIND">, on the server, with no JavaScript in the page.
 *
 * It parses with tree-sitter (Debian's libtree-sitter) and the grammars and
 * highlights.scm queries of the npm packages in tools/npm, compiled into
 * kvsite by the Makefile (see README, "Code highlighting"). Kinds: comment,
 * string, constant, keyword, function, type, property, heading, link, punct;
 * the theme's CSS colours them.
 *
 * Languages and their fence names: lua; c, h; sh, bash, shell, zsh; yaml, yml;
 * json; python, py; markdown, md. Anything else stays plain, and so does a
 * block over HL_MAX_BYTES or one tree-sitter cannot parse in HL_TIMEOUT_US.
 *
 * Thread-safe: each language's query is compiled once, on first use, and
 * kept for the life of the process; each thread that highlights keeps one
 * parser and one query cursor (freed when it ends). */
#ifndef KV_HIGHLIGHT_H
#define KV_HIGHLIGHT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define HL_MAX_BYTES ((size_t)64 << 10)
#define HL_TIMEOUT_US 1000000u

/* True when lang (a fence's first word, not NUL-terminated: lang_len bytes)
 * names a language highlight knows. */
bool hl_known(const char *lang, size_t lang_len);

/* Appends code (len bytes) HTML-escaped with its tokens in spans to out and
 * returns true; returns false with out untouched when the language is
 * unknown or the block is over the bounds above. Nothing to free. */
bool hl_html(const char *lang, size_t lang_len, const char *code, size_t len, buf *out);

/* Compiles every language's query now (about 60 ms in all) instead of on
 * first use. For a long-lived process that forks workers build after build
 * (kvsite serve): they inherit the compiled queries instead of compiling
 * again in every build. */
void hl_preload(void);

/* The same in a thread of its own, started while the build reads its
 * content (a core is free then more often than not), so that the workers
 * forked after hl_preload_join inherit the queries instead of each
 * compiling the languages it meets. hl_preload_join stops it after the
 * language being compiled and waits for it; no other thread may fork while
 * it runs (the child would find the lock held). Both are no-ops when called
 * again; join without start is one too. */
void hl_preload_start(void);
void hl_preload_join(void);

#endif
