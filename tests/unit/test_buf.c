/* Unit tests for gen/buf.c: the growable buffer, HTML escaping, the x* family
 * and the out-of-memory policy (exit status 70 with one line on stderr). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- basic life cycle ----------------------------------------------------- */

static void test_init_is_empty(void **state)
{
    (void)state;
    buf a = BUF_INIT;
    assert_null(a.ptr);
    assert_int_equal(a.len, 0);
    assert_int_equal(a.cap, 0);
    assert_string_equal(buf_cstr(&a), "");

    buf b;
    memset(&b, 0x5a, sizeof b);
    buf_init(&b);
    assert_null(b.ptr);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    /* freeing an empty buffer is fine, and leaves it empty */
    buf_free(&b);
    assert_null(b.ptr);
    assert_int_equal(b.cap, 0);
}

static void test_put_and_terminate(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    buf_put(&b, "abc", 3);
    assert_non_null(b.ptr);
    assert_int_equal(b.len, 3);
    assert_int_equal(b.ptr[3], '\0');
    assert_string_equal(buf_cstr(&b), "abc");
    buf_puts(&b, "def");
    buf_putc(&b, 'g');
    assert_int_equal(b.len, 7);
    assert_string_equal(b.ptr, "abcdefg");
    /* a zero-length write still leaves a terminated string */
    buf_put(&b, "zzz", 0);
    assert_int_equal(b.len, 7);
    assert_string_equal(b.ptr, "abcdefg");
    buf_free(&b);
    assert_null(b.ptr);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
}

static void test_embedded_nul(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    buf_put(&b, "a\0b", 3);
    buf_putc(&b, '\0');
    buf_putc(&b, 'c');
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.ptr, "a\0b\0c", 6); /* includes the terminating NUL */
    buf_free(&b);
}

static void test_growth_doubles(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    buf_grow(&b, 0);
    assert_non_null(b.ptr);
    assert_int_equal(b.cap, 64);
    assert_int_equal(b.len, 0);

    /* 63 bytes + NUL fit the first 64 */
    char chunk[200];
    for (size_t i = 0; i < sizeof chunk; i++)
        chunk[i] = (char)('a' + i % 26);
    buf_put(&b, chunk, 63);
    assert_int_equal(b.cap, 64);
    buf_putc(&b, 'x'); /* 64 bytes + NUL: doubles */
    assert_int_equal(b.cap, 128);
    buf_put(&b, chunk, 200); /* 264 + 1 -> 512 */
    assert_int_equal(b.len, 264);
    assert_int_equal(b.cap, 512);
    assert_memory_equal(b.ptr, chunk, 63);
    assert_int_equal(b.ptr[63], 'x');
    assert_memory_equal(b.ptr + 64, chunk, 200);
    assert_int_equal(b.ptr[264], '\0');

    /* grow reserves without changing the content */
    buf_grow(&b, 10000);
    assert_true(b.cap >= 264 + 10000 + 1);
    assert_int_equal(b.cap & (b.cap - 1), 0);
    assert_int_equal(b.len, 264);
    assert_memory_equal(b.ptr + 64, chunk, 200);
    buf_free(&b);
}

static void test_many_small_writes(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    for (int i = 0; i < 100000; i++)
        buf_putc(&b, '0' + i % 10);
    assert_int_equal(b.len, 100000);
    for (int i = 0; i < 100000; i++)
        if (b.ptr[i] != '0' + i % 10)
            fail_msg("byte %d is %c", i, b.ptr[i]);
    assert_int_equal(b.ptr[100000], '\0');
    assert_true(b.cap > b.len);
    buf_free(&b);
}

static void test_clear_and_truncate(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    buf_clear(&b); /* on an empty buffer: nothing to do, no crash */
    assert_null(b.ptr);
    buf_puts(&b, "hello world");
    size_t cap = b.cap;
    buf_truncate(&b, 5);
    assert_int_equal(b.len, 5);
    assert_string_equal(b.ptr, "hello");
    buf_truncate(&b, 50); /* longer than the content: no change */
    assert_int_equal(b.len, 5);
    assert_string_equal(b.ptr, "hello");
    buf_truncate(&b, 0);
    assert_int_equal(b.len, 0);
    assert_string_equal(buf_cstr(&b), "");
    buf_puts(&b, "again");
    buf_clear(&b);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, cap); /* keeps the storage */
    assert_non_null(b.ptr);
    assert_string_equal(buf_cstr(&b), "");
    buf_free(&b);
}

static void test_detach(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    char *s = buf_detach(&b); /* empty: still a string the caller frees */
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
    assert_null(b.ptr);

    buf_puts(&b, "owned");
    s = buf_detach(&b);
    assert_string_equal(s, "owned");
    assert_null(b.ptr);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    /* the buffer is reusable and independent of the detached string */
    buf_puts(&b, "new");
    assert_string_equal(s, "owned");
    assert_string_equal(b.ptr, "new");
    free(s);
    buf_free(&b);
}

/* ---- printf --------------------------------------------------------------- */

static void S_vwrap(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

static void test_printf(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    buf_printf(&b, "%d-%s-%.2f", 42, "x", 1.005);
    assert_string_equal(b.ptr, "42-x-1.00"); /* plain C rounding, no locale */
    buf_printf(&b, "|%zu|%05d|%c", (size_t)7, 12, 'z');
    assert_string_equal(b.ptr, "42-x-1.00|7|00012|z");
    assert_int_equal(b.len, strlen("42-x-1.00|7|00012|z"));
    buf_printf(&b, "%s", "");
    assert_int_equal(b.len, strlen("42-x-1.00|7|00012|z"));
    S_vwrap(&b, "[%s:%d]", "v", -3);
    assert_string_equal(b.ptr, "42-x-1.00|7|00012|z[v:-3]");
    buf_free(&b);

    /* output longer than any initial capacity, and with a percent sign */
    char big[5000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    buf_printf(&b, "<%s>%%", big);
    assert_int_equal(b.len, 4999 + 3);
    assert_int_equal(b.ptr[0], '<');
    assert_int_equal(b.ptr[5000], '>');
    assert_int_equal(b.ptr[5001], '%');
    assert_int_equal(b.ptr[5002], '\0');
    buf_free(&b);

    /* an empty format on a fresh buffer gives a valid, empty string */
    buf_printf(&b, "%s", "");
    assert_int_equal(b.len, 0);
    assert_string_equal(buf_cstr(&b), "");
    buf_free(&b);
}

/* ---- HTML escaping -------------------------------------------------------- */

typedef struct {
    const char *in;
    size_t len;
    const char *out;
    size_t outlen;
} html_case;

#define HC(i, o) {i, sizeof(i) - 1, o, sizeof(o) - 1}
static const html_case S_html[] = {
    HC("", ""),
    HC("plain text", "plain text"),
    HC("a&b", "a&amp;b"),
    HC("<script>", "&lt;script&gt;"),
    HC("\"q\"", "&quot;q&quot;"),
    HC("it's", "it&#39;s"),
    HC("&&", "&amp;&amp;"),
    HC("&amp;", "&amp;amp;"), /* never "smart": escaping is idempotent only once */
    HC("<a href=\"x\" title='y'>&</a>",
       "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"),
    HC("键值 < 缓存", "键值 &lt; 缓存"),
    HC("nul\0<", "nul\0&lt;"),
    HC(">", "&gt;"),
};

static void test_put_html(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(S_html); i++) {
        buf b = BUF_INIT;
        buf_puts(&b, "[");
        buf_put_html(&b, S_html[i].in, S_html[i].len);
        assert_int_equal(b.len, S_html[i].outlen + 1);
        if (memcmp(b.ptr + 1, S_html[i].out, S_html[i].outlen) != 0)
            fail_msg("case %zu: got \"%s\"", i, b.ptr);
        assert_int_equal(b.ptr[b.len], '\0');
        buf_free(&b);
    }
    /* only len bytes are read */
    buf b = BUF_INIT;
    buf_put_html(&b, "<ab>", 2);
    assert_string_equal(b.ptr, "&lt;a");
    buf_free(&b);
}

/* ---- x* family ------------------------------------------------------------ */

static void test_x_family(void **state)
{
    (void)state;
    char *p = xmalloc(0);
    assert_non_null(p); /* never NULL, even for 0 bytes */
    free(p);

    int *z = xcalloc(100, sizeof *z);
    for (int i = 0; i < 100; i++)
        assert_int_equal(z[i], 0);
    z = xrealloc(z, 1000 * sizeof *z);
    assert_int_equal(z[99], 0);
    z[999] = 5;
    free(z);
    void *zz = xcalloc(0, 0);
    assert_non_null(zz);
    free(zz);

    char *d = xstrdup("dup");
    assert_string_equal(d, "dup");
    free(d);
    d = xstrndup("abcdef", 3);
    assert_string_equal(d, "abc");
    free(d);
    d = xstrndup("a\0bc", 4); /* copies n bytes, embedded NUL included */
    assert_memory_equal(d, "a\0bc", 5);
    free(d);
    d = xasprintf("%s=%d", "k", 9);
    assert_string_equal(d, "k=9");
    free(d);
    d = xasprintf("%s", "");
    assert_string_equal(d, "");
    free(d);
}

/* The out-of-memory path exits with 70 and prints one line: run it in a child. */
static void test_oom_exits_70(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        buf b = BUF_INIT;
        buf_puts(&b, "x");
        buf_grow(&b, SIZE_MAX / 2); /* refused before any allocation */
        _exit(0);
    }
    close(fds[1]);
    char out[256] = {0};
    size_t got = 0;
    ssize_t r;
    while (got < sizeof out - 1 && (r = read(fds[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)r;
    close(fds[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 70);
    char want[128];
    snprintf(want, sizeof want, "kvsite: out of memory (allocating %zu bytes)\n", SIZE_MAX / 2);
    assert_string_equal(out, want);
}

/* buf_put_int against printf's %lld, on the edges of every digit count. */
/* Regression: a title with a control character ("a\x0b") made feed.xml
 * ill-formed; XML 1.0 forbids it. What XML forbids becomes U+FFFD. */
static void test_put_xml(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    const char in[] = "a\x0b<b>&\"'\t\n\r\x01\x1f\x7f é中 \xef\xbf\xbe\xef\xbf\xbf\xef\xbf\xbd "
                      "\xff\xc3 \xe4\xb8";
    buf_put_xml(&b, in, sizeof in - 1);
    assert_string_equal(buf_cstr(&b),
                        "a\xef\xbf\xbd&lt;b&gt;&amp;&quot;&#39;\t\n\r\xef\xbf\xbd\xef\xbf\xbd\x7f é中 "
                        "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
                        "\xef\xbf\xbd\xef\xbf\xbd");
    /* a NUL inside the length, and text with nothing to replace as buf_put_html */
    buf_clear(&b);
    buf_put_xml(&b, "x\0y", 3);
    assert_memory_equal(b.ptr, "x\xef\xbf\xbdy", 5);
    buf_clear(&b);
    buf_put_xml(&b, "plain <text> 中文", strlen("plain <text> 中文"));
    assert_string_equal(buf_cstr(&b), "plain &lt;text&gt; 中文");
    buf_free(&b);
}

static void test_put_int(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    char want[32];
    long long edges[] = {0, 1, -1, 9, 10, 99, 100, LLONG_MAX, LLONG_MIN, LLONG_MIN + 1};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        buf_clear(&b);
        buf_put_int(&b, edges[i]);
        snprintf(want, sizeof want, "%lld", edges[i]);
        assert_string_equal(b.ptr, want);
    }
    for (long long p = 1; p <= LLONG_MAX / 10; p *= 10) {
        long long around[] = {p - 1, p, p + 1, -(p - 1), -p, -(p + 1)};
        for (size_t i = 0; i < 6; i++) {
            buf_clear(&b);
            buf_putc(&b, 'x'); /* after other bytes */
            buf_put_int(&b, around[i]);
            snprintf(want, sizeof want, "x%lld", around[i]);
            assert_string_equal(b.ptr, want);
            assert_int_equal(b.len, strlen(want));
        }
    }
    buf_free(&b);
}

/* One value through buf_put_g17 and through printf's "%.17g". */
static void S_g17_is_printf(double v)
{
    buf b = BUF_INIT;
    char want[64];
    buf_puts(&b, "v=");
    buf_put_g17(&b, v);
    snprintf(want, sizeof want, "v=%.17g", v);
    if (strcmp(b.ptr, want) != 0 || b.len != strlen(want))
        fail_msg("%a: \"%s\", printf: \"%s\"", v, b.ptr, want);
    buf_free(&b);
}

/* buf_put_g17 writes integers below 1e17 and fractions m / 2^k (k <= 10,
 * up to 17 digits) itself, and leaves everything else to printf: the text
 * is printf's either way, on every boundary of those rules. */
static void test_put_g17(void **state)
{
    (void)state;
    const double two53 = 9007199254740992.0;
    double edges[] = {
        0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.875, 0.1, 1.0 / 3, 40.25, 1e15, 1e16, 1e16 + 2,
        1e17, -1e17, 1e17 - 16, -(1e17 - 16), 1e17 + 16, 1e18, two53, two53 + 2, two53 - 1,
        -two53, -two53 - 2, 2 * two53, 123456789012345.5, 1234567890123456.5, 99999999999999.99,
        0x1p-10, 0x1p-11, 3 * 0x1p-10, -0x1p-10, 0x1p-1074, DBL_MIN, DBL_MAX, -DBL_MAX,
        1e-5, 0.0001, 0.00048828125, 12345678.123046875, 9.2233720368547758e18, 1e300,
        NAN, -NAN, INFINITY, -INFINITY, 234881024.0, 402653184.0};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
        S_g17_is_printf(edges[i]);
    /* every k up to and past 10, with the largest numerators around 1e17 / 5^k */
    for (int k = 1; k <= 12; k++) {
        double scale = ldexp(1.0, -k), pow5 = pow(5, k);
        double top = floor(1e17 / pow5);
        for (double m = 1; m < 64; m++) {
            S_g17_is_printf(m * scale);
            S_g17_is_printf(-m * scale);
            S_g17_is_printf((top - m) * scale);
            S_g17_is_printf((top + m) * scale);
        }
    }
    /* and a spread of random bit patterns and random dyadic fractions */
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        S_g17_is_printf(v);
        S_g17_is_printf(ldexp((double)(x >> (x % 64)), -(int)(x % 14)));
        S_g17_is_printf((double)(int64_t)x / 1024.0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_is_empty),
        cmocka_unit_test(test_put_and_terminate),
        cmocka_unit_test(test_embedded_nul),
        cmocka_unit_test(test_growth_doubles),
        cmocka_unit_test(test_many_small_writes),
        cmocka_unit_test(test_clear_and_truncate),
        cmocka_unit_test(test_detach),
        cmocka_unit_test(test_printf),
        cmocka_unit_test(test_put_html),
        cmocka_unit_test(test_put_xml),
        cmocka_unit_test(test_put_int),
        cmocka_unit_test(test_put_g17),
        cmocka_unit_test(test_x_family),
        cmocka_unit_test(test_oom_exits_70),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
