/* tmpdir: a temporary folder per test, for the unit tests that need files.
 *
 * tmpdir_setup makes a fresh folder from a mkdtemp template ("/tmp/x-XXXXXX")
 * and stores its malloc'ed path in *state; tmpdir_teardown removes the folder
 * and frees the path. tmpdir_put writes text to dir/rel, making the folders
 * on the way, and fails the test on any error. Header-only (static inline):
 * each test executable is built from its one source file. */
#ifndef KV_TEST_TMPDIR_H
#define KV_TEST_TMPDIR_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"

static inline int tmpdir_setup(void **state, const char *template)
{
    char *dir = strdup(template);
    if (!dir || !mkdtemp(dir)) {
        free(dir);
        return -1;
    }
    *state = dir;
    return 0;
}

static inline int tmpdir_teardown(void **state)
{
    fs_remove_tree(*state);
    free(*state);
    return 0;
}

static inline void tmpdir_put(const char *dir, const char *rel, const char *text)
{
    char *p = xasprintf("%s/%s", dir, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    assert_int_equal(fs_mkdir_p(p), 0);
    *slash = '/';
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    free(p);
}

#endif
