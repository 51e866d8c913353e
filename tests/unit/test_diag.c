/* Unit tests for gen/diag.c: located diagnostics, counts, moving, promotion,
 * stable sorting and both output formats (compiler style, GitHub commands). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include "buf.h"
#include "diag.h"
#include "tmpdir.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Prints dl into a malloc'ed string. */
static char *S_print(const diag_list *dl, bool github)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    assert_non_null(f);
    diag_print(dl, f, github);
    fclose(f);
    return s;
}

static void test_add_copies_and_counts(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(dl.n, 0);
    assert_int_equal(dl.errors, 0);
    assert_int_equal(dl.warnings, 0);

    char file[32] = "content/a.md";
    diag_error(&dl, file, 3, 7, "quoted %d %s", 40, "GB");
    strcpy(file, "XXXXXXXX"); /* the list made its own copy */
    diag_warning(&dl, NULL, 0, 0, "no file");
    diag_add(&dl, DIAG_NOTE, "n.md", 1, 0, "a note");
    diag_add(&dl, DIAG_ERROR, "e.md", 2, 2, "%s", "via add");
    diag_add(&dl, DIAG_WARNING, "w.md", 0, 0, "100%% sure");

    assert_int_equal(dl.n, 5);
    assert_int_equal(dl.errors, 2);
    assert_int_equal(dl.warnings, 2);
    assert_string_equal(dl.v[0].file, "content/a.md");
    assert_int_equal(dl.v[0].line, 3);
    assert_int_equal(dl.v[0].col, 7);
    assert_int_equal(dl.v[0].level, DIAG_ERROR);
    assert_string_equal(dl.v[0].msg, "quoted 40 GB");
    assert_null(dl.v[1].file);
    assert_int_equal(dl.v[1].level, DIAG_WARNING);
    assert_int_equal(dl.v[2].level, DIAG_NOTE);
    assert_string_equal(dl.v[3].msg, "via add");
    assert_string_equal(dl.v[4].msg, "100% sure");
    diag_list_free(&dl);
    assert_int_equal(dl.n, 0);
    assert_null(dl.v);
    assert_int_equal(dl.errors, 0);
    diag_list_free(&dl); /* twice is harmless */
}

static void test_many_and_long(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    for (int i = 0; i < 1000; i++)
        diag_error(&dl, "f.md", i + 1, 1, "error %d", i);
    assert_int_equal(dl.n, 1000);
    assert_int_equal(dl.errors, 1000);
    for (int i = 0; i < 1000; i++) {
        char want[32];
        snprintf(want, sizeof want, "error %d", i);
        assert_string_equal(dl.v[i].msg, want);
        assert_int_equal(dl.v[i].line, i + 1);
    }
    char *big = xmalloc(20001);
    memset(big, 'm', 20000);
    big[20000] = '\0';
    diag_warning(&dl, "f.md", 1, 1, "%s!", big);
    assert_int_equal(strlen(dl.v[1000].msg), 20001);
    free(big);
    diag_list_free(&dl);
}

static void test_move(void **state)
{
    (void)state;
    diag_list a, b;
    diag_list_init(&a);
    diag_list_init(&b);
    diag_error(&a, "a.md", 1, 1, "a1");
    diag_error(&b, "b.md", 1, 1, "b1");
    diag_warning(&b, "b.md", 2, 1, "b2");
    diag_add(&b, DIAG_NOTE, "b.md", 3, 1, "b3");
    diag_move(&a, &b);
    assert_int_equal(a.n, 4);
    assert_int_equal(a.errors, 2);
    assert_int_equal(a.warnings, 1);
    assert_string_equal(a.v[0].msg, "a1");
    assert_string_equal(a.v[1].msg, "b1");
    assert_string_equal(a.v[2].msg, "b2");
    assert_string_equal(a.v[3].msg, "b3");
    assert_int_equal(b.n, 0);
    assert_int_equal(b.errors, 0);
    assert_int_equal(b.warnings, 0);
    assert_null(b.v);
    /* src is reusable, and moving an empty list changes nothing */
    diag_error(&b, "c.md", 1, 1, "c1");
    assert_int_equal(b.n, 1);
    diag_list empty;
    diag_list_init(&empty);
    diag_move(&a, &empty);
    assert_int_equal(a.n, 4);
    /* into an empty list */
    diag_move(&empty, &a);
    assert_int_equal(empty.n, 4);
    assert_int_equal(empty.errors, 2);
    assert_int_equal(a.n, 0);
    diag_list_free(&a);
    diag_list_free(&b);
    diag_list_free(&empty);
}

static void test_promote(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    diag_warning(&dl, "a.md", 1, 1, "w1");
    diag_error(&dl, "a.md", 2, 1, "e1");
    diag_add(&dl, DIAG_NOTE, "a.md", 3, 1, "n1");
    diag_warning(&dl, "a.md", 4, 1, "w2");
    diag_promote_warnings(&dl);
    assert_int_equal(dl.errors, 3);
    assert_int_equal(dl.warnings, 0);
    assert_int_equal(dl.v[0].level, DIAG_ERROR);
    assert_int_equal(dl.v[1].level, DIAG_ERROR);
    assert_int_equal(dl.v[2].level, DIAG_NOTE); /* notes stay notes */
    assert_int_equal(dl.v[3].level, DIAG_ERROR);
    diag_promote_warnings(&dl);
    assert_int_equal(dl.errors, 3);
    diag_list_free(&dl);
}

/* ---- sorting -------------------------------------------------------------- */

typedef struct {
    const char *file;
    int line, col;
    const char *msg;
} sort_item;

static void test_sort_order_and_stability(void **state)
{
    (void)state;
    static const sort_item in[] = {
        {"b.md", 2, 1, "b2-first"}, {"a.md", 10, 1, "a10"},    {NULL, 0, 0, "nofile-1"},
        {"a.md", 2, 5, "a2c5"},     {"b.md", 2, 1, "b2-second"}, {"a.md", 2, 0, "a2c0"},
        {"a.md", 0, 0, "a0"},       {NULL, 0, 0, "nofile-2"},   {"b.md", 2, 1, "b2-third"},
        {"a.md", 9, 99, "a9"},      {"", 1, 1, "empty-name"},
    };
    static const char *want[] = {
        "nofile-1", "nofile-2", "empty-name", "a0", "a2c0", "a2c5", "a9", "a10",
        "b2-first", "b2-second", "b2-third",
    };
    diag_list dl;
    diag_list_init(&dl);
    for (size_t i = 0; i < N(in); i++)
        diag_error(&dl, in[i].file, in[i].line, in[i].col, "%s", in[i].msg);
    diag_sort(&dl);
    assert_int_equal(dl.n, N(want));
    for (size_t i = 0; i < N(want); i++)
        if (strcmp(dl.v[i].msg, want[i]) != 0)
            fail_msg("position %zu: %s, expected %s", i, dl.v[i].msg, want[i]);
    /* sorting a sorted list changes nothing */
    diag_sort(&dl);
    for (size_t i = 0; i < N(want); i++)
        assert_string_equal(dl.v[i].msg, want[i]);
    diag_list_free(&dl);
}

static void test_sort_large_stable(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    /* 600 entries on 3 files x 10 lines, inserted in a scrambled order; each
     * message carries its insertion number, which must rise within a key */
    for (int i = 0; i < 600; i++) {
        int k = (i * 7919) % 30;
        char file[8];
        snprintf(file, sizeof file, "%c.md", 'c' - k % 3);
        diag_error(&dl, file, 10 - k / 3, 1, "%d", i);
    }
    diag_sort(&dl);
    for (size_t i = 1; i < dl.n; i++) {
        const diag *a = &dl.v[i - 1], *b = &dl.v[i];
        int c = strcmp(a->file, b->file);
        assert_true(c <= 0);
        if (c == 0) {
            assert_true(a->line <= b->line);
            if (a->line == b->line)
                assert_true(atoi(a->msg) < atoi(b->msg));
        }
    }
    assert_int_equal(dl.errors, 600);
    diag_list_free(&dl);
}

/* ---- printing ------------------------------------------------------------- */

static void test_print_plain(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    diag_error(&dl, "content/articles/kv-12.md", 88, 14,
               "quoted 40 GB, but kv.bytes(llama70b, 131072) = 42.95 GB (40.00 GiB); did you "
               "mean GiB?");
    diag_warning(&dl, "site.yaml", 3, 0, "line only");
    diag_add(&dl, DIAG_NOTE, "a.md", 0, 5, "col without line is not shown");
    diag_error(&dl, NULL, 7, 7, "no file");
    char *s = S_print(&dl, false);
    assert_string_equal(s,
                        "content/articles/kv-12.md:88:14: error: quoted 40 GB, but "
                        "kv.bytes(llama70b, 131072) = 42.95 GB (40.00 GiB); did you mean GiB?\n"
                        "site.yaml:3: warning: line only\n"
                        "a.md: note: col without line is not shown\n"
                        "kvsite: error: no file\n");
    free(s);
    /* github=false never prints workflow commands; an empty list prints nothing */
    diag_list empty;
    diag_list_init(&empty);
    s = S_print(&empty, true);
    assert_string_equal(s, "");
    free(s);
    diag_list_free(&dl);
}

static void test_print_github(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    diag_error(&dl, "content/a.md", 2, 3, "50%% off\nsecond line\r");
    diag_warning(&dl, "dir,with:odd%name.md", 4, 0, "a: b, c");
    diag_add(&dl, DIAG_NOTE, "content/a.md", 1, 1, "notes are not commands");
    diag_error(&dl, NULL, 0, 0, "global");
    char *s = S_print(&dl, true);
    /* the plain lines come first (test_print_plain); then one command per
     * error or warning, each on one line */
    const char *cmds = strstr(s, "\n::error file=");
    assert_non_null(cmds);
    assert_true(strstr(s, "kvsite: error: global\n") < cmds);
    assert_string_equal(cmds + 1,
                        "::error file=content/a.md,line=2,col=3::50%25 off%0Asecond line%0D\n"
                        "::warning file=dir%2Cwith%3Aodd%25name.md,line=4::a: b, c\n"
                        "::error::global\n");
    free(s);
    diag_list_free(&dl);
}

/* Regression: page text (print, error) and file names reached the log raw:
 * a newline started a line of its own, such as a fake workflow command, and
 * escapes reached the terminal. Every line printed is one diagnostic. */
static void test_print_controls(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    diag_add(&dl, DIAG_NOTE, "content/a.md", 3, 0,
             "x\n::error file=README.md,line=1::fake\r\n::add-mask::s");
    diag_error(&dl, "content/b\n::warning::x.md", 1, 2, "\x1b[31mred\x1b[0m\x07 tab\there");
    diag_error(&dl, "content/c.md", 0, 0, "C1 \xc2\x9b" "2J, bad \xff\xc3 end, ok é 中 \x7f");
    diag_error(&dl, "content/d.md", 0, 0, "cut \xe4\xb8");
    char *s = S_print(&dl, false);
    assert_string_equal(s,
                        "content/a.md:3: note: x\\n::error file=README.md,line=1::fake\\r\\n"
                        "::add-mask::s\n"
                        "content/b\\n::warning::x.md:1:2: error: \\x1b[31mred\\x1b[0m\\x07 "
                        "tab\there\n"
                        "content/c.md: error: C1 \\u009b2J, bad \\xff\\xc3 end, ok é 中 \\x7f\n"
                        "content/d.md: error: cut \\xe4\\xb8\n");
    free(s);
    s = S_print(&dl, true);
    const char *cmds = strstr(s, "\n::error file=content/b");
    assert_non_null(cmds);
    assert_string_equal(cmds + 1,
                        "::error file=content/b%0A%3A%3Awarning%3A%3Ax.md,line=1,col=2::"
                        "\\x1b[31mred\\x1b[0m\\x07 tab\there\n"
                        "::error file=content/c.md::C1 \\u009b2J, bad \\xff\\xc3 end, ok é 中 "
                        "\\x7f\n"
                        "::error file=content/d.md::cut \\xe4\\xb8\n");
    /* one line per diagnostic: 4 plain lines and 3 commands */
    size_t lines = 0;
    for (const char *p = s; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 7);
    free(s);
    diag_list_free(&dl);
}

/* An unbuffered stream (stderr) that counts its writes. */
typedef struct {
    size_t writes, bytes;
} write_count;

static ssize_t S_count_write(void *cookie, const char *b, size_t n)
{
    (void)b;
    write_count *c = cookie;
    c->writes++;
    c->bytes += n;
    return (ssize_t)n;
}

/* stderr is unbuffered: the report went out a character a system call, and
 * a build with 60,000 broken links spent 13 s printing it. Now whole lines
 * go out in blocks of about 64 KiB. */
static void test_print_in_blocks(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    for (int i = 0; i < 2000; i++)
        diag_error(&dl, "content/a/p.md", i + 1, 5, "broken link to /p%05d/#part-%d: no page or file there", i, i);
    for (int github = 0; github < 2; github++) {
        write_count c = {0, 0};
        cookie_io_functions_t fns = {NULL, S_count_write, NULL, NULL};
        FILE *f = fopencookie(&c, "w", fns);
        assert_non_null(f);
        setvbuf(f, NULL, _IONBF, 0);
        diag_print(&dl, f, github);
        fclose(f);
        assert_true(c.bytes > (size_t)2000 * 60 * (size_t)(github + 1));
        if (c.writes > c.bytes / (32u << 10) + 2)
            fail_msg("%zu writes for %zu bytes", c.writes, c.bytes);
    }
    write_count c = {0, 0};
    cookie_io_functions_t fns = {NULL, S_count_write, NULL, NULL};
    FILE *f = fopencookie(&c, "w", fns);
    setvbuf(f, NULL, _IONBF, 0);
    diag_print_line(f, "content/a.md", 3, 4, "changed: 1 -> 2", "notice");
    fclose(f);
    assert_int_equal(c.writes, 1);
    diag_list_free(&dl);
}

static void test_level_names(void **state)
{
    (void)state;
    assert_string_equal(diag_level_name(DIAG_ERROR), "error");
    assert_string_equal(diag_level_name(DIAG_WARNING), "warning");
    assert_string_equal(diag_level_name(DIAG_NOTE), "note");
}

/* Byte columns become code point columns, file by file, once (issue 20). */
static void test_code_point_columns(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "content/zh.md", "# 标题\n\n中文中文 `5 MiB {= 4}` x\r\nabc\n");
    tmpdir_put(dir, "bom.json", "\xEF\xBB\xBF{\"键\": 1, x}\n");
    tmpdir_put(dir, "bad.md", "\xFF\xFE" "ab\n");
    diag_list dl;
    diag_list_init(&dl);
    diag_error(&dl, "content/zh.md", 3, 15, "figure");   /* "5": after 4 CJK, space, ` */
    diag_error(&dl, "content/zh.md", 3, 28, "end");      /* "x" before the CR */
    diag_error(&dl, "content/zh.md", 4, 2, "ascii");
    diag_error(&dl, "content/zh.md", 9, 5, "no such line");
    diag_error(&dl, "content/zh.md", 1, 0, "no column");
    diag_error(&dl, "bom.json", 1, 12, "after the BOM"); /* x: the BOM is not counted */
    diag_error(&dl, "bad.md", 1, 4, "stray bytes");
    diag_error(&dl, "missing.md", 1, 9, "unreadable: bytes stay");
    diag_error(&dl, NULL, 0, 0, "no file");
    diag_code_point_columns(&dl, dir, 1 << 20);
    static const int want[] = {7, 20, 2, 5, 0, 10, 4, 9, 0};
    for (size_t i = 0; i < N(want); i++)
        if (dl.v[i].col != want[i])
            fail_msg("diagnostic %zu (%s): col %d, expected %d", i, dl.v[i].msg, dl.v[i].col,
                     want[i]);
    /* converted ones are not converted again; a new one is */
    diag_error(&dl, "content/zh.md", 3, 15, "later");
    diag_code_point_columns(&dl, dir, 1 << 20);
    assert_int_equal(dl.v[0].col, 7);
    assert_int_equal(dl.v[dl.n - 1].col, 7);
    char *out = S_print(&dl, true);
    assert_non_null(strstr(out, "content/zh.md:3:7: error: figure\n"));
    assert_non_null(strstr(out, "::error file=content/zh.md,line=3,col=7::figure\n"));
    free(out);
    /* a file over the cap is left in bytes */
    diag_list_free(&dl);
    diag_error(&dl, "content/zh.md", 3, 15, "figure");
    diag_code_point_columns(&dl, dir, 8);
    assert_int_equal(dl.v[0].col, 15);
    diag_list_free(&dl);
}

/* One of each alike diagnostic, with how many pages reported it. */
/* A run of one warning on a page: the first DIAG_FOLD_SHOWN listed, the rest
 * one warning at the first of them, with their count and last line; "on"
 * off: every one listed. */
static void test_fold(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    diag_fold f;
    diag_fold_init(&f, true);
    for (int i = 1; i <= 25; i++)
        if (diag_fold_take(&f, 100 + i, i))
            diag_warning(&dl, "a.md", 100 + i, i, "thing %d", i);
    assert_int_equal(dl.n, DIAG_FOLD_SHOWN);
    diag_fold_end(&f, &dl, "a.md", "thing", "things");
    assert_int_equal(dl.n, DIAG_FOLD_SHOWN + 1);
    assert_int_equal(dl.warnings, DIAG_FOLD_SHOWN + 1);
    const diag *d = &dl.v[DIAG_FOLD_SHOWN];
    assert_int_equal(d->level, DIAG_WARNING);
    assert_string_equal(d->file, "a.md");
    assert_int_equal(d->line, 100 + DIAG_FOLD_SHOWN + 1);
    assert_int_equal(d->col, DIAG_FOLD_SHOWN + 1);
    char want[128];
    snprintf(want, sizeof want,
             "%d more things in this file, from here to line 125 (not listed one by one)",
             25 - DIAG_FOLD_SHOWN);
    assert_string_equal(d->msg, want);
    /* ended: nothing more to say */
    diag_fold_end(&f, &dl, "a.md", "thing", "things");
    assert_int_equal(dl.n, DIAG_FOLD_SHOWN + 1);
    diag_list_free(&dl);

    /* one past the first few: the singular */
    diag_list_init(&dl);
    diag_fold_init(&f, true);
    for (int i = 1; i <= DIAG_FOLD_SHOWN + 1; i++)
        if (diag_fold_take(&f, i, 1))
            diag_warning(&dl, "a.md", i, 1, "thing");
    diag_fold_end(&f, &dl, "a.md", "thing", "things");
    assert_int_equal(dl.n, DIAG_FOLD_SHOWN + 1);
    assert_string_equal(dl.v[DIAG_FOLD_SHOWN].msg, "1 more thing in this file, from here to "
                                                   "line 11 (not listed one by one)");
    diag_list_free(&dl);

    /* off (--strict): every one */
    diag_list_init(&dl);
    diag_fold_init(&f, false);
    for (int i = 1; i <= 25; i++)
        if (diag_fold_take(&f, i, 1))
            diag_error(&dl, "a.md", i, 1, "thing");
    diag_fold_end(&f, &dl, "a.md", "thing", "things");
    assert_int_equal(dl.n, 25);
    assert_int_equal(dl.errors, 25);
    diag_list_free(&dl);
}

/* One cause failing many things alike (a full disk): the first kept, the
 * others gone and counted in its message; counts and the code point
 * columns already done follow. */
static void test_keep_first(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    diag_error(&dl, "a.md", 1, 1, "other");
    diag_error(&dl, "b.md", 0, 0, "disk full: cannot write b");
    diag_warning(&dl, "c.md", 2, 1, "note this");
    diag_error(&dl, "d.md", 0, 0, "disk full: cannot write d");
    dl.cp_done = 3; /* the first three converted */
    diag_error(&dl, NULL, 0, 0, "disk full: cannot write e");
    diag_keep_first(&dl, "disk full", "files not written");
    assert_int_equal(dl.n, 3);
    assert_int_equal(dl.errors, 2);
    assert_int_equal(dl.warnings, 1);
    assert_string_equal(dl.v[0].msg, "other");
    assert_string_equal(dl.v[1].file, "b.md");
    assert_string_equal(dl.v[1].msg, "disk full: cannot write b (and 2 more files not written)");
    assert_string_equal(dl.v[2].msg, "note this");
    assert_int_equal(dl.cp_done, 3);
    /* one alone: as it was */
    diag_keep_first(&dl, "other", "things");
    assert_string_equal(dl.v[0].msg, "other");
    assert_int_equal(dl.n, 3);
    diag_list_free(&dl);
}

static void test_move_merged(void **state)
{
    (void)state;
    diag_list dl, shared;
    diag_list_init(&dl);
    diag_list_init(&shared);
    diag_error(&dl, "content/a.md", 1, 1, "own");
    for (int i = 0; i < 3; i++)
        diag_error(&shared, "templates/page.html", 2, 5, "')' expected near 'x'");
    diag_error(&shared, "templates/page.html", 2, 5, "another message");
    diag_warning(&shared, "templates/page.html", 7, 0, "w");
    diag_warning(&shared, "templates/page.html", 7, 0, "w");
    diag_error(&shared, "templates/page.html", 3, 5, "')' expected near 'x'"); /* other line */
    diag_move_merged(&dl, &shared);
    assert_int_equal(shared.n, 0);
    assert_int_equal(dl.n, 5);
    assert_int_equal(dl.errors, 4);
    assert_int_equal(dl.warnings, 1);
    assert_string_equal(dl.v[1].msg, "')' expected near 'x' (broke 3 pages)");
    assert_string_equal(dl.v[2].msg, "another message");
    assert_string_equal(dl.v[3].msg, "w (in 2 pages)");
    assert_string_equal(dl.v[4].msg, "')' expected near 'x'");
    diag_list_free(&dl);
}

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-diag-XXXXXX"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_copies_and_counts),
        cmocka_unit_test(test_many_and_long),
        cmocka_unit_test(test_move),
        cmocka_unit_test(test_promote),
        cmocka_unit_test(test_sort_order_and_stability),
        cmocka_unit_test(test_sort_large_stable),
        cmocka_unit_test(test_print_plain),
        cmocka_unit_test(test_print_github),
        cmocka_unit_test(test_print_controls),
        cmocka_unit_test(test_print_in_blocks),
        cmocka_unit_test(test_level_names),
        cmocka_unit_test_setup_teardown(test_code_point_columns, S_setup, tmpdir_teardown),
        cmocka_unit_test(test_move_merged),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_keep_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
