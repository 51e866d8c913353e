/* scaffold: `kvsite new`: a new site from a starter, a new page in a site.
 *
 *   kvsite new DIR [--lang en|zh]        copies the starter site for the language
 *                                         (paths.h: share/kvsite/starter/<lang>) into
 *                                         DIR, which must be missing or empty
 *   kvsite new page [-C DIR] SECTION/NAME adds content/SECTION/NAME.md with front
 *                                         matter (title from NAME, date today)
 *
 * Messages go to stderr, what was made to stdout. Strings returned are malloc'ed
 * and the caller frees them. */
#ifndef KV_SCAFFOLD_H
#define KV_SCAFFOLD_H

#include "buf.h"

/* The command: argv[0] is "new". Returns the exit status (0, 1 on a file
 * error, 2 on a usage error or a folder that is not empty). */
int scaffold_main(int argc, char **argv);

/* Copies every file and folder of starter (dotfiles included; symbolic links
 * skipped) into dir, made when missing. Returns 0, or -1 with a message in err:
 * dir is not empty or not a folder, or a copy failed. */
int scaffold_site(const char *starter, const char *dir, buf *err);

/* The title a page named name gets: "-" and "_" as spaces, the first letter
 * upper-case ("kv-cache_sizes" -> "Kv cache sizes"). */
char *scaffold_title(const char *name);

/* Checks spec ("SECTION/NAME", "NAME", an optional ".md"): components of
 * letters, digits, "-", "_" and non-ASCII UTF-8 (CJK names), none empty or
 * starting with "."; at most 8 of them. Returns "content/SECTION/NAME.md", or
 * NULL with a message in err. */
char *scaffold_page_path(const char *spec, buf *err);

/* Writes root/<path of spec> with front matter (title, date = today, a
 * "YYYY-MM-DD"); refuses a page that exists. Returns 0, or -1 with err. */
int scaffold_page(const char *root, const char *spec, const char *today, buf *err);

#endif
