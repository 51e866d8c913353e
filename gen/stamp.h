/* stamp: a fingerprint of the files a build reads and writes, for the
 * no-change fast path. A stamp lists every file under the given folders with
 * its size, modification time and inode, in a stable order, and hashes it.
 * If the stamp of the inputs and of the output equals the one recorded after
 * the last successful build, nothing can have changed and the build is done. */
#ifndef KV_STAMP_H
#define KV_STAMP_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Adds every regular file and symbolic link under root/rel (recursively,
 * dotfiles included) to the running hash h; missing folders add a marker.
 * Bounded by max_files; returns the number of files seen. */
uint64_t stamp_tree(uint64_t h, const char *root, const char *rel, size_t max_files,
                    size_t *files);
/* The same, and calls each(ctx, "rel/dir/name", stamp) for every regular file
 * with a stamp of that file alone (as stamp_file gives). */
uint64_t stamp_tree_each(uint64_t h, const char *root, const char *rel, size_t max_files,
                         size_t *files, void (*each)(void *ctx, const char *path, uint64_t stamp),
                         void *ctx);
/* The stamp of the tree under root/rel as a sum: each entry (file, folder,
 * link, anything) counts its own stamp (stamp_entry of its key and stat), so
 * the sum does not depend on the order of the walk, and a caller that knows
 * which entries changed can update it: subtract an entry's old stamp, add
 * its new one. An entry's key is its path "rel/a/b.md", "rel/a/" for a
 * folder, "?rel/a/x" for what is neither a folder nor a regular file; a
 * regular file's stamp is the one stamp_tree_each gives it but for the
 * lowest bit, set in every entry's stamp (never 0: 0 is no entry). each(ctx, key,
 * stamp) sees every entry. Bounded by max_files as stamp_tree; a missing
 * root/rel sums to a marker of its own. */
uint64_t stamp_tree_sum(const char *root, const char *rel, size_t max_files, size_t *files,
                        void (*each)(void *ctx, const char *key, uint64_t stamp), void *ctx);
/* One entry's stamp in such a sum, from its key and a stat made of it. */
struct stat;
uint64_t stamp_entry(const char *key, const struct stat *st);
/* Adds one file (or its absence). */
uint64_t stamp_file(uint64_t h, const char *path);
/* The same for path relative to the open folder dirfd. */
uint64_t stamp_file_at(uint64_t h, int dirfd, const char *path);
/* stamp_file_at(STAMP_SEED, dirfd, paths[i]) of each of n paths, into
 * stamps[i]; two threads take the stats when there are many (the pages of a
 * site: a kernel path walk each). */
void stamp_files_at(int dirfd, char **paths, size_t n, uint64_t *stamps);
/* A file's stamp (as stamp_file_at gives it) from a stat already made. */
uint64_t stamp_of_stat(uint64_t h, const char *path, const struct stat *st);
/* Adds n bytes (FNV-1a, a 64-bit word at a step): the one hash of the build's
 * fingerprints. */
uint64_t stamp_bytes(uint64_t h, const void *p, size_t n);
/* Adds a string. */
uint64_t stamp_str(uint64_t h, const char *s);
/* A hash of n bytes for a table's slots: stamp_bytes with its high half
 * folded into the low bits that pick a slot. */
uint64_t stamp_key(const void *p, size_t n);
#define STAMP_SEED 1469598103934665603ull

#endif
