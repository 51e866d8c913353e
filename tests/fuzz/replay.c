/* replay: a libFuzzer target's entry points run over saved inputs, without
 * libFuzzer. `make check-fuzz` links each target of tests/fuzz/ with this
 * main, under the project's own compiler and flags (ASan and UBSan with
 * SAN=1), and replays its saved crashes (regressions/<target>/) and seeds
 * (seeds/<target>/): a target that no longer compiles, or an input that
 * once crashed and does again, fails the tests instead of waiting for the
 * next fuzzing session.
 *
 *   replay PATH...   each PATH a file, or a folder whose files (not its
 *                    dotfiles, not its subfolders) are taken in name order
 *
 * Exit status 0 when every input ran; 1 when a path cannot be read; a crash
 * ends the process as it would end the fuzzer. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Targets that need a set-up define the first (weak: quote and arith do not). */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer's default -max_len for a corpus of small files is 4096; the
 * saved inputs here are hand-written or found, well under this */
#define REPLAY_MAX_INPUT ((size_t)1 << 20)

static int S_run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        perror(path);
        if (f)
            fclose(f);
        return -1;
    }
    size_t n = (size_t)st.st_size;
    /* exactly n bytes, as libFuzzer hands them: no terminator to lean on,
     * and a read past the end is one AddressSanitizer sees */
    uint8_t *data = n <= REPLAY_MAX_INPUT ? malloc(n ? n : 1) : NULL;
    bool whole = data && fread(data, 1, n, f) == n && fgetc(f) == EOF;
    fclose(f);
    if (!whole) {
        fprintf(stderr, "%s: cannot read it whole (at most %zu bytes)\n", path, REPLAY_MAX_INPUT);
        free(data);
        return -1;
    }
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    return 0;
}

static int S_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of a folder in name order; how many ran, or -1. */
static long S_run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t count = 0, cap = 0;
    long ran = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) {
                ran = -1;
                break;
            }
            names = grown;
        }
        size_t len = strlen(dir) + 1 + strlen(e->d_name) + 1;
        names[count] = malloc(len);
        if (!names[count]) {
            ran = -1;
            break;
        }
        snprintf(names[count++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (ran == 0 && count)
        qsort(names, count, sizeof *names, S_name_cmp);
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        if (ran >= 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            ran = S_run_file(names[i]) == 0 ? ran + 1 : -1;
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH...\n", argv[0]);
        return 2;
    }
    const char *self = argv[0];
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long ran;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        ran = S_ISDIR(st.st_mode) ? S_run_dir(argv[i]) : S_run_file(argv[i]) == 0 ? 1 : -1;
        if (ran < 0)
            return 1;
        total += ran;
    }
    printf("%s: %ld inputs replayed\n", self, total);
    return 0;
}
