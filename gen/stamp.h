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
/* Adds one file (or its absence). */
uint64_t stamp_file(uint64_t h, const char *path);
/* The same for path relative to the open folder dirfd. */
uint64_t stamp_file_at(uint64_t h, int dirfd, const char *path);
/* A file's stamp (as stamp_file_at gives it) from a stat already made. */
struct stat;
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
