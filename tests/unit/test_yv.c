/* Unit tests for gen/yv.c: the value tree and its YAML, JSON and CSV loaders. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "buf.h"
#include "diag.h"
#include "yv.h"

enum { YAML, JSON, CSV };

#define HASH_SEED 1469598103934665603ull /* any start works */

static yv *parse(int fmt, const char *text, size_t len, const yv_limits *lim, int line_offset,
                 diag_list *dl)
{
    switch (fmt) {
    case YAML: return yv_parse_yaml(text, len, lim, "in.yaml", line_offset, dl);
    case JSON: return yv_parse_json(text, len, lim, "in.json", dl);
    default: return yv_parse_csv(text, len, lim, "in.csv", dl);
    }
}

/* Parses text that must succeed, without any diagnostic. */
static yv *ok(int fmt, const char *text)
{
    diag_list dl;
    diag_list_init(&dl);
    yv *v = parse(fmt, text, strlen(text), NULL, 0, &dl);
    if (!v || dl.n)
        fail_msg("parse of \"%s\" failed: %s", text, dl.n ? dl.v[0].msg : "(no message)");
    diag_list_free(&dl);
    return v;
}

/* Parses text that must fail with exactly one error at line:col saying msg. */
static void check_error(const char *name, int fmt, const char *text, size_t len,
                        const yv_limits *lim, int line_offset, int line, int col, const char *msg)
{
    diag_list dl;
    diag_list_init(&dl);
    yv *v = parse(fmt, text, len, lim, line_offset, &dl);
    if (v) {
        yv_free(v);
        diag_list_free(&dl);
        fail_msg("%s: parsed, expected error \"%s\"", name, msg);
    }
    if (dl.n != 1 || dl.errors != 1 || dl.v[0].line != line || dl.v[0].col != col ||
        strcmp(dl.v[0].msg, msg) != 0 || strcmp(dl.v[0].file, fmt == YAML   ? "in.yaml"
                                                             : fmt == JSON ? "in.json"
                                                                           : "in.csv") != 0) {
        char got[512];
        snprintf(got, sizeof got, "%zu diags, first %d:%d %s", dl.n, dl.n ? dl.v[0].line : -1,
                 dl.n ? dl.v[0].col : -1, dl.n ? dl.v[0].msg : "");
        diag_list_free(&dl);
        fail_msg("%s: want %d:%d \"%s\", got %s", name, line, col, msg, got);
    }
    diag_list_free(&dl);
}

static void check_pos(const yv *v, int line, int col)
{
    assert_non_null(v);
    assert_int_equal(v->line, line);
    assert_int_equal(v->col, col);
}

/* ------------------------------------------------------------ scalars */

struct scalar_case {
    const char *text; /* a YAML value after "v: " */
    yv_type type;
    long long i;
    double f;
    const char *str; /* expected ->str */
};

static const struct scalar_case scalar_cases[] = {
    {"null", YV_NULL, 0, 0, "null"},
    {"Null", YV_NULL, 0, 0, "Null"},
    {"NULL", YV_NULL, 0, 0, "NULL"},
    {"~", YV_NULL, 0, 0, "~"},
    {"", YV_NULL, 0, 0, ""},
    {"true", YV_BOOL, 1, 0, "true"},
    {"True", YV_BOOL, 1, 0, "True"},
    {"TRUE", YV_BOOL, 1, 0, "TRUE"},
    {"false", YV_BOOL, 0, 0, "false"},
    {"False", YV_BOOL, 0, 0, "False"},
    {"FALSE", YV_BOOL, 0, 0, "FALSE"},
    {"42", YV_INT, 42, 0, "42"},
    {"-17", YV_INT, -17, 0, "-17"},
    {"+5", YV_INT, 5, 0, "+5"},
    {"007", YV_INT, 7, 0, "007"},
    {"0x1F", YV_INT, 31, 0, "0x1F"},
    {"0xff", YV_INT, 255, 0, "0xff"},
    {"0o17", YV_INT, 15, 0, "0o17"},
    {"9223372036854775807", YV_INT, INT64_MAX, 0, "9223372036854775807"},
    {"-9223372036854775808", YV_INT, INT64_MIN, 0, "-9223372036854775808"},
    {"9223372036854775808", YV_FLOAT, 0, 9223372036854775808.0, "9223372036854775808"},
    {"0x10000000000000000", YV_FLOAT, 0, 18446744073709551616.0, "0x10000000000000000"},
    {"0x7FFFFFFFFFFFFFFF", YV_INT, INT64_MAX, 0, "0x7FFFFFFFFFFFFFFF"},
    {"1.5", YV_FLOAT, 0, 1.5, "1.5"},
    {"57.21", YV_FLOAT, 0, 57.21, "57.21"},
    {".5", YV_FLOAT, 0, 0.5, ".5"},
    {"1.", YV_FLOAT, 0, 1.0, "1."},
    {"1e3", YV_FLOAT, 0, 1000.0, "1e3"},
    {"-2.5E-3", YV_FLOAT, 0, -2.5e-3, "-2.5E-3"},
    {"+1.25e+2", YV_FLOAT, 0, 125.0, "+1.25e+2"},
    {".inf", YV_FLOAT, 0, INFINITY, ".inf"},
    {"+.Inf", YV_FLOAT, 0, INFINITY, "+.Inf"},
    {"-.inf", YV_FLOAT, 0, -INFINITY, "-.inf"},
    {"-.INF", YV_FLOAT, 0, -INFINITY, "-.INF"},
    {"f16", YV_STRING, 0, 0, "f16"},
    {"2024-01-05", YV_STRING, 0, 0, "2024-01-05"},
    {"1_000", YV_STRING, 0, 0, "1_000"},
    {"0b101", YV_STRING, 0, 0, "0b101"},
    {"0o8", YV_STRING, 0, 0, "0o8"},
    {"0x", YV_STRING, 0, 0, "0x"},
    {"1.2.3", YV_STRING, 0, 0, "1.2.3"},
    {"1e", YV_STRING, 0, 0, "1e"},
    {"e3", YV_STRING, 0, 0, "e3"},
    {".", YV_STRING, 0, 0, "."},
    {"-x", YV_STRING, 0, 0, "-x"},
    {"+.nan", YV_STRING, 0, 0, "+.nan"},
    {"yes", YV_STRING, 0, 0, "yes"},
    {"224 MiB", YV_STRING, 0, 0, "224 MiB"},
    {"'42'", YV_STRING, 0, 0, "42"},
    {"\"true\"", YV_STRING, 0, 0, "true"},
    {"''", YV_STRING, 0, 0, ""},
    {"\"a\\tb\\u00e9\"", YV_STRING, 0, 0, "a\tb\xC3\xA9"},
    {"!!str 12", YV_STRING, 0, 0, "12"},
    {"! 12", YV_STRING, 0, 0, "12"},
    {"!!int '7'", YV_INT, 7, 0, "7"},
    {"!!float 3", YV_FLOAT, 0, 3.0, "3"},
    {"!!bool \"true\"", YV_BOOL, 1, 0, "true"},
    {"!!null ~", YV_NULL, 0, 0, "~"},
    {"multi\n  line", YV_STRING, 0, 0, "multi line"},
};

static void test_yaml_scalars(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof scalar_cases / sizeof scalar_cases[0]; k++) {
        const struct scalar_case *c = &scalar_cases[k];
        char text[128];
        snprintf(text, sizeof text, "v: %s\n", c->text);
        yv *root = ok(YAML, text);
        const yv *v = yv_get(root, "v");
        if (!v || v->type != c->type || strcmp(v->str, c->str) != 0 || v->len != strlen(c->str))
            fail_msg("\"%s\": got %s \"%s\"", c->text, v ? yv_type_name(v->type) : "nothing",
                     v ? v->str : "");
        if (c->type == YV_BOOL && v->b != (c->i != 0))
            fail_msg("\"%s\": wrong boolean", c->text);
        if (c->type == YV_INT && v->i != c->i)
            fail_msg("\"%s\": got %lld", c->text, v->i);
        if (c->type == YV_FLOAT && v->f != c->f)
            fail_msg("\"%s\": got %.17g", c->text, v->f);
        yv_free(root);
    }
}

static void test_yaml_nan(void **state)
{
    (void)state;
    const char *nans[] = {".nan", ".NaN", ".NAN"};
    for (size_t k = 0; k < 3; k++) {
        char text[32];
        snprintf(text, sizeof text, "- %s", nans[k]);
        yv *root = ok(YAML, text);
        assert_int_equal(root->items[0]->type, YV_FLOAT);
        assert_true(isnan(root->items[0]->f));
        yv_free(root);
    }
}

/* ------------------------------------------------ structure and positions */

static void test_yaml_nested_positions(void **state)
{
    (void)state;
    const char *text = "title: Hello\n"
                       "model:\n"
                       "  layers: 32\n"
                       "  heads: [8, 4]\n"
                       "list:\n"
                       "  - a\n"
                       "  - b: 1.5\n"
                       "    c: {d: x}\n";
    yv *root = ok(YAML, text);
    assert_int_equal(root->type, YV_MAP);
    check_pos(root, 1, 1);
    assert_int_equal(root->n, 3);
    assert_string_equal(root->keys[0], "title");
    assert_string_equal(root->keys[1], "model");
    assert_string_equal(root->keys[2], "list");
    assert_int_equal(root->key_lines[2], 5);
    assert_int_equal(root->key_cols[2], 1);
    assert_string_equal(yv_string(yv_get(root, "title")), "Hello");
    check_pos(yv_get(root, "title"), 1, 8);

    const yv *model = yv_get(root, "model");
    assert_int_equal(model->type, YV_MAP);
    check_pos(model, 3, 3);
    assert_int_equal(model->key_lines[1], 4);
    assert_int_equal(model->key_cols[1], 3);
    assert_int_equal(yv_get(model, "layers")->i, 32);
    const yv *heads = yv_get(model, "heads");
    assert_int_equal(heads->type, YV_SEQ);
    check_pos(heads, 4, 10);
    assert_int_equal(heads->n, 2);
    check_pos(yv_at(heads, 0), 4, 11);
    check_pos(yv_at(heads, 1), 4, 14);
    assert_int_equal(yv_at(heads, 1)->i, 4);
    assert_null(yv_at(heads, 2));

    const yv *list = yv_get(root, "list");
    check_pos(list, 6, 3);
    assert_int_equal(list->n, 2);
    assert_string_equal(yv_string(yv_at(list, 0)), "a");
    const yv *m = yv_at(list, 1);
    assert_int_equal(m->type, YV_MAP);
    check_pos(m, 7, 5);
    double d = 0;
    assert_true(yv_number(yv_get(m, "b"), &d));
    assert_true(d == 1.5);
    const yv *c = yv_get(m, "c");
    check_pos(c, 8, 8);
    assert_string_equal(yv_string(yv_get(c, "d")), "x");
    check_pos(yv_get(c, "d"), 8, 12);
    yv_free(root);
}

static void test_yaml_columns_count_bytes(void **state)
{
    (void)state;
    /* é is 2 bytes and 标题 6: libyaml counts characters, diagnostics bytes */
    yv *root = ok(YAML, "\xC3\xA9: [1, x]\n\xE6\xA0\x87\xE9\xA2\x98: {a: \xE5\x80\xBC, b: 2}\n");
    check_pos(root->items[0], 1, 5);
    check_pos(root->items[0]->items[1], 1, 9);
    const yv *m = root->items[1];
    check_pos(m, 2, 9);
    assert_int_equal(m->key_cols[1], 18);
    check_pos(m->items[1], 2, 21);
    yv_free(root);

    /* a BOM takes no column */
    root = ok(YAML, "\xEF\xBB\xBF\xC3\xA9: [1]\nb: 2\n");
    check_pos(root->items[0], 1, 5);
    check_pos(root->items[1], 2, 4);
    yv_free(root);
}

static void test_yaml_line_offset(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    const char *text = "title: x\ntags: [a, b]\n";
    yv *root = yv_parse_yaml(text, strlen(text), NULL, "p.md", 1, &dl);
    assert_non_null(root);
    assert_int_equal(dl.n, 0);
    check_pos(root, 2, 1);
    assert_int_equal(root->key_lines[1], 3);
    check_pos(root->items[1], 3, 7);
    check_pos(root->items[1]->items[1], 3, 11);
    yv_free(root);
    diag_list_free(&dl);
}

static void test_yaml_empty_and_roots(void **state)
{
    (void)state;
    const char *empties[] = {"", "# only a comment\n", "\n\n", "---\n", "--- # c\n...\n"};
    for (size_t k = 0; k < sizeof empties / sizeof empties[0]; k++) {
        yv *v = ok(YAML, empties[k]);
        assert_int_equal(v->type, YV_MAP);
        assert_int_equal(v->n, 0);
        yv_free(v);
    }
    diag_list dl;
    diag_list_init(&dl);
    yv *v = yv_parse_yaml("", 0, NULL, "p.md", 1, &dl);
    check_pos(v, 2, 1);
    yv_free(v);
    diag_list_free(&dl);

    v = ok(YAML, "- a\n- ~\n- 3\n");
    assert_int_equal(v->type, YV_SEQ);
    assert_int_equal(v->n, 3);
    assert_int_equal(v->items[1]->type, YV_NULL);
    assert_int_equal(v->items[2]->i, 3);
    yv_free(v);

    v = ok(YAML, "42");
    assert_int_equal(v->type, YV_INT);
    assert_int_equal(v->i, 42);
    yv_free(v);

    v = ok(YAML, "~");
    assert_int_equal(v->type, YV_NULL);
    yv_free(v);

    /* keys are text whatever they look like; empty values are null */
    v = ok(YAML, "1: a\ntrue: b\nnull: c\nempty:\n'': d\n");
    assert_int_equal(v->n, 5);
    assert_string_equal(yv_string(yv_get(v, "1")), "a");
    assert_string_equal(yv_string(yv_get(v, "true")), "b");
    assert_string_equal(yv_string(yv_get(v, "null")), "c");
    assert_int_equal(yv_get(v, "empty")->type, YV_NULL);
    assert_string_equal(yv_string(yv_get(v, "")), "d");
    assert_null(yv_get(v, "absent"));
    assert_null(yv_get(v->items[0], "x")); /* not a map */
    yv_free(v);
}

static void test_yaml_standard_tags_on_collections(void **state)
{
    (void)state;
    yv *v = ok(YAML, "a: !!seq [1]\nb: !!map {c: 2}\nc: ! [3]\n");
    assert_int_equal(yv_get(v, "a")->type, YV_SEQ);
    assert_int_equal(yv_get(v, "b")->type, YV_MAP);
    assert_int_equal(yv_get(v, "c")->type, YV_SEQ);
    yv_free(v);
}

/* ---------------------------------------------------------------- errors */

struct error_case {
    const char *name;
    int fmt;
    const char *text;
    int line_offset;
    int line, col;
    const char *msg;
};

static const struct error_case error_cases[] = {
    /* YAML syntax, at the file's line */
    {"yaml syntax", YAML, "a: 1\nb: 2\n- c\n", 0, 3, 1, "invalid YAML: did not find expected key"},
    {"front matter syntax", YAML, "a: 1\nb: 2\n- c\n", 1, 4, 1,
     "invalid YAML: did not find expected key"},
    {"yaml flow", YAML, "title: x\ntags: [a, b\ndate: 1\n", 0, 3, 5,
     "invalid YAML: did not find expected ',' or ']'"},
    {"yaml indentation", YAML, "a: 1\n b: 2\n", 0, 2, 3,
     "invalid YAML: mapping values are not allowed in this context"},
    {"yaml control char", YAML, "a: \x01\n", 0, 1, 4,
     "invalid YAML: control characters are not allowed"},
    {"yaml control char offset", YAML, "a: 1\nb: x\x01\n", 1, 3, 5,
     "invalid YAML: control characters are not allowed"},
    /* duplicates */
    {"dup key", YAML, "title: a\nx: 1\ntitle: b\n", 0, 3, 1, "duplicate key \"title\" (first at line 1)"},
    {"dup key offset", YAML, "x: 1\ntitle: a\ntitle: b\n", 1, 4, 1,
     "duplicate key \"title\" (first at line 3)"},
    {"dup key nested", YAML, "a:\n  b: 1\n  c: 2\n  b: 3\n", 0, 4, 3, "duplicate key \"b\" (first at line 2)"},
    {"dup key flow", YAML, "{a: 1, b: 2, a: 3}", 0, 1, 14, "duplicate key \"a\" (first at line 1)"},
    {"dup key as text", YAML, "1: a\n\"1\": b\n", 0, 2, 1, "duplicate key \"1\" (first at line 1)"},
    {"dup earliest repeat", YAML, "z: 1\na: 1\na: 2\nz: 2\n", 0, 3, 1,
     "duplicate key \"a\" (first at line 2)"},
    {"dup key quoted in message", YAML, "\"a\\\"\\nb\": 1\n\"a\\\"\\nb\": 2\n", 0, 2, 1,
     "duplicate key \"a\\\"\\x0Ab\" (first at line 1)"},
    /* refused constructs */
    {"alias", YAML, "a: 1\nb: *x\n", 0, 2, 4, "YAML aliases are not supported"},
    {"anchor", YAML, "a: &x 1\n", 0, 1, 4, "YAML anchors are not supported"},
    {"anchor on map", YAML, "base: &b\n  x: 1\n", 1, 2, 7, "YAML anchors are not supported"},
    {"merge key", YAML, "a: {x: 1}\nb:\n  <<: *a\n", 0, 3, 7, "YAML aliases are not supported"},
    {"custom tag", YAML, "a: !foo 1\n", 0, 1, 4, "unsupported YAML tag \"!foo\" here"},
    {"binary tag", YAML, "a: !!binary aGk=\n", 0, 1, 4, "unsupported YAML tag \"!!binary\" here"},
    {"seq tag on scalar", YAML, "a: !!seq 1\n", 0, 1, 4, "unsupported YAML tag \"!!seq\" here"},
    {"map tag on seq", YAML, "a: !!map [1]\n", 0, 1, 4, "unsupported YAML tag \"!!map\" here"},
    {"python tag", YAML, "- !!python/object:os.system x\n", 0, 1, 3,
     "unsupported YAML tag \"!!python/object:os.system\" here"},
    {"bad int", YAML, "a: !!int x1\n", 0, 1, 4, "\"x1\" is not a valid !!int"},
    {"bad bool", YAML, "a: !!bool yes\n", 0, 1, 4, "\"yes\" is not a valid !!bool"},
    {"bad float", YAML, "a: !!float abc\n", 0, 1, 4, "\"abc\" is not a valid !!float"},
    {"complex key", YAML, "? [a]\n: 1\n", 0, 1, 3, "YAML map keys must be scalars, not a list"},
    {"map key", YAML, "{{a: 1}: 2}", 0, 1, 2, "YAML map keys must be scalars, not a map"},
    {"second document", YAML, "a: 1\n---\nb: 2\n", 0, 2, 1, "more than one YAML document"},
    {"second document offset", YAML, "a: 1\n--- x\n", 1, 3, 1, "more than one YAML document"},
    {"nul escape", YAML, "a: \"x\\0y\"\n", 0, 1, 4, "NUL character in string"},
    {"nul escape key", YAML, "\"\\0\": 1\n", 0, 1, 1, "NUL character in string"},
    /* input checks, shared by all formats */
    {"bad utf-8", YAML, "a: b\nc: \xFF\n", 0, 2, 4, "invalid UTF-8 at byte 8"},
    {"bad utf-8 offset", YAML, "a: b\nc: \xFF\n", 1, 3, 4, "invalid UTF-8 at byte 8"},
    {"overlong", YAML, "a: \xC0\x80\n", 0, 1, 4, "invalid UTF-8 at byte 3"},
    {"overlong 3", YAML, "a: \xE0\x80\xAF\n", 0, 1, 4, "invalid UTF-8 at byte 3"},
    {"surrogate", YAML, "a: \xED\xA0\x80\n", 0, 1, 4, "invalid UTF-8 at byte 3"},
    {"past U+10FFFF", YAML, "a: \xF4\x90\x80\x80\n", 0, 1, 4, "invalid UTF-8 at byte 3"},
    {"truncated", YAML, "a: \xE2\x82", 0, 1, 4, "invalid UTF-8 at byte 3"},
    {"lone continuation", YAML, "\xC3\xA9\x80", 0, 1, 3, "invalid UTF-8 at byte 2"},
    {"json bad utf-8", JSON, "[\"\xC3\"]", 0, 1, 3, "invalid UTF-8 at byte 2"},
    {"csv bad utf-8", CSV, "a\n\xFE\n", 0, 2, 1, "invalid UTF-8 at byte 2"},

    /* JSON grammar */
    {"json empty", JSON, "", 0, 1, 1, "invalid JSON: unexpected end of input"},
    {"json blank", JSON, " \n ", 0, 2, 2, "invalid JSON: unexpected end of input"},
    {"json trailing comma obj", JSON, "{\"a\":1,}", 0, 1, 8, "invalid JSON: expected a string key"},
    {"json trailing comma arr", JSON, "[1,]", 0, 1, 4, "invalid JSON: expected a value"},
    {"json unquoted key", JSON, "{a:1}", 0, 1, 2, "invalid JSON: expected a string key"},
    {"json missing colon", JSON, "{\"a\" 1}", 0, 1, 6, "invalid JSON: expected ':'"},
    {"json missing comma arr", JSON, "[1 2]", 0, 1, 4, "invalid JSON: expected ',' or ']'"},
    {"json missing comma obj", JSON, "{\"a\":1\n \"b\":2}", 0, 2, 2, "invalid JSON: expected ',' or '}'"},
    {"json mismatched", JSON, "[1}", 0, 1, 3, "invalid JSON: expected ',' or ']'"},
    {"json trailing", JSON, "[1] x", 0, 1, 5, "invalid JSON: unexpected content after the value"},
    {"json two values", JSON, "1 2", 0, 1, 3, "invalid JSON: unexpected content after the value"},
    {"json unclosed", JSON, "[1,\n", 0, 2, 1, "invalid JSON: unexpected end of input"},
    {"json unclosed obj", JSON, "{\"a\":1", 0, 1, 7, "invalid JSON: unexpected end of input"},
    {"json unterminated", JSON, "\n  \"abc", 0, 2, 3, "invalid JSON: unterminated string"},
    {"json bad escape", JSON, "\"a\\qb\"", 0, 1, 3, "invalid JSON: invalid escape"},
    {"json short u", JSON, "\"\\u12\"", 0, 1, 2, "invalid JSON: invalid \\u escape"},
    {"json bad hex", JSON, "\"\\u12G4\"", 0, 1, 2, "invalid JSON: invalid \\u escape"},
    {"json lone high", JSON, "\"x\\ud800\"", 0, 1, 3, "invalid JSON: unpaired surrogate in \\u escape"},
    {"json high then char", JSON, "\"\\ud800\\u0041\"", 0, 1, 2,
     "invalid JSON: unpaired surrogate in \\u escape"},
    {"json lone low", JSON, "\"\\udc00\"", 0, 1, 2, "invalid JSON: unpaired surrogate in \\u escape"},
    {"json nul escape", JSON, "[\"a\\u0000\"]", 0, 1, 4, "NUL character in string"},
    {"json raw tab", JSON, "\"a\tb\"", 0, 1, 3, "invalid JSON: control character in string"},
    {"json raw newline", JSON, "\"a\nb\"", 0, 1, 3, "invalid JSON: control character in string"},
    {"json leading zero", JSON, "[01]", 0, 1, 2, "invalid JSON: invalid number"},
    {"json minus", JSON, "-", 0, 1, 1, "invalid JSON: invalid number"},
    {"json minus letter", JSON, "-a", 0, 1, 1, "invalid JSON: invalid number"},
    {"json bare dot", JSON, "1.", 0, 1, 1, "invalid JSON: invalid number"},
    {"json bare exp", JSON, "1e+", 0, 1, 1, "invalid JSON: invalid number"},
    {"json dot first", JSON, ".5", 0, 1, 1, "invalid JSON: expected a value"},
    {"json plus", JSON, "+1", 0, 1, 1, "invalid JSON: expected a value"},
    {"json tru", JSON, "[tru]", 0, 1, 2, "invalid JSON: expected a value"},
    {"json single quotes", JSON, "['a']", 0, 1, 2, "invalid JSON: expected a value"},
    {"json nan", JSON, "NaN", 0, 1, 1, "invalid JSON: expected a value"},
    {"json comment", JSON, "// x\n1", 0, 1, 1, "invalid JSON: expected a value"},
    {"json dup key", JSON, "{\"a\": 1,\n \"b\": 2,\n \"a\": 3}", 0, 3, 2,
     "duplicate key \"a\" (first at line 1)"},
    {"json dup nested", JSON, "[{\"x\":{\"k\":1,\"k\":2}}]", 0, 1, 14,
     "duplicate key \"k\" (first at line 1)"},
    {"json dup via escape", JSON, "{\"\\u0061\":1,\"a\":2}", 0, 1, 13,
     "duplicate key \"a\" (first at line 1)"},

    /* CSV */
    {"csv wrong count", CSV, "a,b\n1,2\n1,2,3\n", 0, 3, 1, "CSV row has 3 cells, the header has 2"},
    {"csv too few", CSV, "a,b\r\n1\r\n", 0, 2, 1, "CSV row has 1 cells, the header has 2"},
    {"csv unterminated", CSV, "a,b\n1,\"x\n2\n", 0, 2, 3, "invalid CSV: unterminated quoted field"},
    {"csv empty header", CSV, "a,,c\n", 0, 1, 3, "empty column name in CSV header (column 2)"},
    {"csv empty quoted header", CSV, "\"\"\n1\n", 0, 1, 1, "empty column name in CSV header (column 1)"},
    {"csv dup header", CSV, "a,b,a\n", 0, 1, 5,
     "duplicate column name \"a\" in CSV header (first in column 1)"},
    {"csv after quote", CSV, "a\n\"x\"y\n", 0, 2, 4, "invalid CSV: unexpected character after a closing quote"},
    {"csv quote inside", CSV, "a\nx\"y\n", 0, 2, 2, "invalid CSV: quote in an unquoted field"},
    {"csv bare cr", CSV, "a\nx\ry\n", 0, 2, 2, "invalid CSV: carriage return without a line feed"},
    {"csv row after multiline", CSV, "a,b\n\"1\n2\",3\n4\n", 0, 4, 1,
     "CSV row has 1 cells, the header has 2"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof error_cases / sizeof error_cases[0]; k++) {
        const struct error_case *c = &error_cases[k];
        check_error(c->name, c->fmt, c->text, strlen(c->text), NULL, c->line_offset, c->line,
                    c->col, c->msg);
    }
}

static void test_nul_bytes(void **state)
{
    (void)state;
    check_error("yaml nul", YAML, "a: b\0c\n", 7, NULL, 0, 1, 5, "NUL byte in input");
    check_error("yaml nul offset", YAML, "a: 1\n\0", 6, NULL, 1, 3, 1, "NUL byte in input");
    check_error("json nul", JSON, "[1,\0]", 5, NULL, 0, 1, 4, "NUL byte in input");
    check_error("csv nul", CSV, "a\n\"\0\"\n", 6, NULL, 0, 2, 2, "NUL byte in input");
    /* a NUL byte and bad UTF-8: the first of them is reported */
    check_error("nul first", YAML, "a: \0\xFF\n", 6, NULL, 0, 1, 4, "NUL byte in input");
    check_error("bad utf-8 first", YAML, "a: \xFF\0\n", 6, NULL, 0, 1, 4,
                "invalid UTF-8 at byte 3");
    check_error("nul after a bad lead", JSON, "[\"\xE2\0\"]", 5, NULL, 0, 1, 3,
                "invalid UTF-8 at byte 2");
}

static void test_limits(void **state)
{
    (void)state;
    yv_limits small = {10, 32, 100};
    for (int fmt = YAML; fmt <= CSV; fmt++)
        check_error("too large", fmt, "[1,2,3,4,5]", 11, &small, 0, 0, 0,
                    "file too large (11 bytes, limit 10)");
    diag_list dl;
    diag_list_init(&dl);
    small.max_bytes = 11;
    yv *v = parse(YAML, "[1,2,3,4,5]", 11, &small, 0, &dl);
    assert_non_null(v); /* exactly at the limit is fine */
    yv_free(v);

    /* the list is 1 value, its items 5 more */
    yv_limits five = {1000, 32, 5};
    check_error("yaml nodes", YAML, "[1, 2, 3, 4, 5]", 15, &five, 0, 1, 14, "more than 5 values");
    check_error("json nodes", JSON, "[1, 2, 3, 4, 5]", 15, &five, 0, 1, 14, "more than 5 values");
    check_error("json nodes obj", JSON, "{\"a\":[1,2,3,\n{}]}", 17, &five, 0, 2, 1,
                "more than 5 values");
    /* the list, 2 rows, 4 cells = 7 */
    yv_limits six = {1000, 32, 6};
    check_error("csv nodes", CSV, "a,b\n1,2\n3,4\n", 12, &six, 0, 3, 3, "more than 6 values");
    six.max_nodes = 7;
    v = parse(CSV, "a,b\n1,2\n3,4\n", 12, &six, 0, &dl);
    assert_non_null(v);
    yv_free(v);
    assert_int_equal(dl.n, 0);
    diag_list_free(&dl);

    yv_limits shallow = {1000, 2, 100};
    check_error("yaml depth", YAML, "a:\n  b:\n    c: 1\n", 17, &shallow, 0, 3, 5,
                "nesting deeper than 2 levels");
    check_error("json depth", JSON, "{\"a\": [[1]]}", 12, &shallow, 0, 1, 8,
                "nesting deeper than 2 levels");
    check_error("csv depth", CSV, "a\n1\n", 4, &(yv_limits){1000, 1, 100}, 0, 2, 1,
                "nesting deeper than 1 levels");
}

/* Depth 32 is fine, 33 is not; 10,000 is refused as early, without recursion. */
static void test_deep_nesting(void **state)
{
    (void)state;
    size_t n = 10000;
    char *text = malloc(2 * n + 1);
    for (int fmt = YAML; fmt <= JSON; fmt++) {
        for (size_t d = 32; d <= 33; d++) {
            memset(text, '[', d);
            memset(text + d, ']', d);
            text[2 * d] = '\0';
            diag_list dl;
            diag_list_init(&dl);
            yv *v = parse(fmt, text, 2 * d, NULL, 0, &dl);
            if (d == 32) {
                assert_non_null(v);
                const yv *p = v;
                for (size_t k = 1; k < 32; k++)
                    p = yv_at(p, 0);
                assert_int_equal(p->type, YV_SEQ);
                assert_int_equal(p->n, 0);
                yv_free(v);
            } else {
                assert_null(v);
                assert_int_equal(dl.n, 1);
                assert_string_equal(dl.v[0].msg, "nesting deeper than 32 levels");
                assert_int_equal(dl.v[0].col, 33);
            }
            diag_list_free(&dl);
        }
        memset(text, '[', n);
        memset(text + n, ']', n);
        check_error("10000 deep", fmt, text, 2 * n, NULL, 0, 1, 33, "nesting deeper than 32 levels");
        check_error("10000 deep unclosed", fmt, text, n, NULL, 0, 1, 33, "nesting deeper than 32 levels");
    }
    buf b = BUF_INIT;
    for (size_t k = 0; k < n; k++)
        buf_puts(&b, "{\"a\":");
    check_error("10000 deep objects", JSON, b.ptr, b.len, NULL, 0, 1, 32 * 5 + 1,
                "nesting deeper than 32 levels");
    buf_clear(&b);
    for (size_t k = 0; k < 200; k++) {
        for (size_t i = 0; i < k; i++)
            buf_puts(&b, "  ");
        buf_puts(&b, "k:\n");
    }
    check_error("200 deep block maps", YAML, b.ptr, b.len, NULL, 0, 33, 65,
                "nesting deeper than 32 levels");
    buf_free(&b);
    free(text);
}

/* "Billion laughs": refused at the first anchor, before any expansion. */
static void test_alias_bomb(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    buf_puts(&b, "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (char c = 'b'; c <= 'z'; c++)
        buf_printf(&b, "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", c, c, c - 1, c - 1, c - 1,
                   c - 1, c - 1, c - 1, c - 1, c - 1, c - 1);
    clock_t t0 = clock();
    check_error("billion laughs", YAML, b.ptr, b.len, NULL, 0, 1, 4, "YAML anchors are not supported");
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 0.5);

    /* aliases alone, with no anchor defined, are refused too */
    buf_clear(&b);
    buf_puts(&b, "x: [1]\ny: [*a, *a]\n");
    check_error("aliases", YAML, b.ptr, b.len, NULL, 0, 2, 5, "YAML aliases are not supported");
    buf_free(&b);
}

/* 99,999 distinct keys parse in good time; one repeat among them is found. */
static void test_wide_map(void **state)
{
    (void)state;
    yv_limits lim = {4u << 20, 32, 100000};
    buf b = BUF_INIT;
    for (int k = 0; k < 99999; k++)
        buf_printf(&b, "k%d: %d\n", k, k);
    diag_list dl;
    diag_list_init(&dl);
    clock_t t0 = clock();
    yv *v = yv_parse_yaml(b.ptr, b.len, &lim, "w.yaml", 0, &dl);
    assert_non_null(v);
    assert_int_equal(v->n, 99999);
    assert_int_equal(yv_get(v, "k77777")->i, 77777);
    yv_free(v);
    buf_puts(&b, "k5: 0\n");
    check_error("dup in wide", YAML, b.ptr, b.len, &(yv_limits){4u << 20, 32, 100001}, 0, 100000, 1,
                "duplicate key \"k5\" (first at line 6)");
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 5.0);
    buf_free(&b);
    diag_list_free(&dl);
}

/* ------------------------------------------------------------------ JSON */

static void test_json_values(void **state)
{
    (void)state;
    yv *v = ok(JSON, "{\"a\": 1, \"b\": [true, false, null],\n"
                     " \"c\": {\"d\": \"x\"}, \"e\": -1.5e2, \"f\": 9223372036854775808,\n"
                     " \"g\": 1.0, \"h\": 1e3, \"i\": -0, \"j\": -9223372036854775808, \"\": []}");
    assert_int_equal(v->type, YV_MAP);
    assert_int_equal(v->n, 10);
    check_pos(v, 1, 1);
    const yv *a = yv_get(v, "a");
    assert_int_equal(a->type, YV_INT);
    assert_int_equal(a->i, 1);
    assert_string_equal(a->str, "1");
    check_pos(a, 1, 7);
    const yv *b = yv_get(v, "b");
    assert_int_equal(b->n, 3);
    assert_int_equal(b->items[0]->type, YV_BOOL);
    assert_true(b->items[0]->b);
    assert_string_equal(b->items[0]->str, "true");
    assert_false(b->items[1]->b);
    assert_int_equal(b->items[2]->type, YV_NULL);
    check_pos(b->items[2], 1, 29);
    assert_int_equal(v->key_lines[2], 2);
    assert_int_equal(v->key_cols[2], 2);
    assert_string_equal(yv_string(yv_get(yv_get(v, "c"), "d")), "x");
    check_pos(yv_get(yv_get(v, "c"), "d"), 2, 13);
    assert_int_equal(yv_get(v, "e")->type, YV_FLOAT);
    assert_true(yv_get(v, "e")->f == -150.0);
    assert_string_equal(yv_get(v, "e")->str, "-1.5e2");
    assert_int_equal(yv_get(v, "f")->type, YV_FLOAT);
    assert_true(yv_get(v, "f")->f == 9223372036854775808.0);
    assert_int_equal(yv_get(v, "g")->type, YV_FLOAT);
    assert_int_equal(yv_get(v, "h")->type, YV_FLOAT);
    assert_int_equal(yv_get(v, "i")->type, YV_INT);
    assert_int_equal(yv_get(v, "i")->i, 0);
    assert_int_equal(yv_get(v, "j")->type, YV_INT);
    assert_true(yv_get(v, "j")->i == INT64_MIN);
    assert_int_equal(yv_get(v, "")->type, YV_SEQ);
    yv_free(v);

    const char *roots[] = {"42", " \"s\" ", "null", "[]", "{}", "\xEF\xBB\xBF[1]"};
    const yv_type types[] = {YV_INT, YV_STRING, YV_NULL, YV_SEQ, YV_MAP, YV_SEQ};
    for (size_t k = 0; k < 6; k++) {
        v = ok(JSON, roots[k]);
        assert_int_equal(v->type, types[k]);
        yv_free(v);
    }
    v = ok(JSON, "\xEF\xBB\xBF [1]");
    check_pos(v, 1, 2);
    yv_free(v);
}

static void test_json_escapes(void **state)
{
    (void)state;
    yv *v = ok(JSON, "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u0041\\u00e9\\u4E2D\", \"\\ud83d\\ude00!\","
                     " \"\\uDBFF\\uDFFF\", \"raw \xE4\xB8\xAD\", \"\"]");
    assert_int_equal(v->n, 6);
    assert_string_equal(v->items[0]->str, "\"\\/\b\f\n\r\t");
    assert_int_equal(v->items[0]->len, 8);
    assert_string_equal(v->items[1]->str, "A\xC3\xA9\xE4\xB8\xAD");
    assert_string_equal(v->items[2]->str, "\xF0\x9F\x98\x80!");
    assert_string_equal(v->items[3]->str, "\xF4\x8F\xBF\xBF");
    assert_string_equal(v->items[4]->str, "raw \xE4\xB8\xAD");
    assert_string_equal(v->items[5]->str, "");
    assert_int_equal(v->items[5]->len, 0);
    assert_int_equal(v->items[5]->type, YV_STRING);
    yv_free(v);

    /* keys decode the same way */
    v = ok(JSON, "{\"\\u00e9\\n\": 1}");
    assert_string_equal(v->keys[0], "\xC3\xA9\n");
    yv_free(v);
}

/* ------------------------------------------------------------------- CSV */

static void test_csv_basic(void **state)
{
    (void)state;
    yv *v = ok(CSV, "model,tokens,gib,dtype\nllama,4096,57.21,f16\nqwen,,0x10,\"8\"\n");
    assert_int_equal(v->type, YV_SEQ);
    assert_int_equal(v->n, 2);
    check_pos(v, 1, 1);
    const yv *r = v->items[0];
    assert_int_equal(r->type, YV_MAP);
    check_pos(r, 2, 1);
    assert_int_equal(r->n, 4);
    assert_string_equal(r->keys[3], "dtype");
    assert_string_equal(yv_string(yv_get(r, "model")), "llama");
    assert_int_equal(yv_get(r, "tokens")->type, YV_INT);
    assert_int_equal(yv_get(r, "tokens")->i, 4096);
    check_pos(yv_get(r, "tokens"), 2, 7);
    assert_int_equal(r->key_lines[1], 2);
    assert_int_equal(r->key_cols[1], 7);
    assert_int_equal(yv_get(r, "gib")->type, YV_FLOAT);
    assert_true(yv_get(r, "gib")->f == 57.21);
    assert_string_equal(yv_string(yv_get(r, "dtype")), "f16");
    r = v->items[1];
    assert_int_equal(yv_get(r, "tokens")->type, YV_NULL);
    assert_int_equal(yv_get(r, "gib")->i, 16);
    assert_int_equal(yv_get(r, "dtype")->type, YV_INT); /* quoting does not make a string */
    check_pos(yv_get(r, "dtype"), 3, 12);
    yv_free(v);
}

static void test_csv_quoting(void **state)
{
    (void)state;
    yv *v = ok(CSV, "\xEF\xBB\xBF" "name,note\r\n"
                    "\"a,b\",\"say \"\"hi\"\"\"\r\n"
                    "\r\n"
                    "\"multi\nline\",\"\"\r\n"
                    "\"x\",y");
    assert_int_equal(v->n, 3);
    const yv *r0 = v->items[0], *r1 = v->items[1], *r2 = v->items[2];
    assert_string_equal(r0->keys[0], "name");
    assert_string_equal(yv_string(yv_get(r0, "name")), "a,b");
    assert_string_equal(yv_string(yv_get(r0, "note")), "say \"hi\"");
    check_pos(yv_get(r0, "note"), 2, 7);
    check_pos(r1, 4, 1);
    assert_string_equal(yv_string(yv_get(r1, "name")), "multi\nline");
    assert_int_equal(yv_get(r1, "note")->type, YV_NULL); /* empty, quoted or not */
    check_pos(yv_get(r1, "note"), 5, 7);
    check_pos(r2, 6, 1);
    assert_string_equal(yv_string(yv_get(r2, "name")), "x");
    assert_string_equal(yv_string(yv_get(r2, "note")), "y");
    yv_free(v);

    /* no trimming: spaces belong to the cell */
    v = ok(CSV, "a, b\n1, 2\n");
    assert_string_equal(v->items[0]->keys[1], " b");
    assert_int_equal(yv_get(v->items[0], " b")->type, YV_STRING);
    yv_free(v);

    const char *empties[] = {"", "a,b\n", "a,b", "a\n\n\n"};
    for (size_t k = 0; k < 4; k++) {
        v = ok(CSV, empties[k]);
        assert_int_equal(v->type, YV_SEQ);
        assert_int_equal(v->n, 0);
        yv_free(v);
    }
    /* a trailing empty cell and a last line without a newline */
    v = ok(CSV, "a,b\n1,\n2,3");
    assert_int_equal(v->n, 2);
    assert_int_equal(yv_get(v->items[0], "b")->type, YV_NULL);
    assert_int_equal(yv_get(v->items[1], "b")->i, 3);
    yv_free(v);
}

/* Keys in messages are quoted, escaped and cut short on a character boundary. */
static void test_long_key_message(void **state)
{
    (void)state;
    buf b = BUF_INIT, want = BUF_INIT;
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 40; i++)
            buf_puts(&b, "\xC3\xA9");
        buf_printf(&b, ": %d\n", k);
    }
    buf_puts(&want, "duplicate key \"");
    for (int i = 0; i < 30; i++)
        buf_puts(&want, "\xC3\xA9");
    buf_puts(&want, "...\" (first at line 1)");
    check_error("long key", YAML, b.ptr, b.len, NULL, 0, 2, 1, want.ptr);
    buf_free(&b);
    buf_free(&want);
}

/* An empty buf has a NULL pointer; that is empty input, not a crash. */
static void test_null_text(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    yv *v = yv_parse_yaml(NULL, 0, NULL, "e.yaml", 0, &dl);
    assert_int_equal(v->type, YV_MAP);
    assert_int_equal(v->n, 0);
    yv_free(v);
    v = yv_parse_csv(NULL, 0, NULL, "e.csv", &dl);
    assert_int_equal(v->type, YV_SEQ);
    assert_int_equal(v->n, 0);
    yv_free(v);
    assert_null(yv_parse_json(NULL, 0, NULL, "e.json", &dl));
    assert_int_equal(dl.n, 1);
    assert_string_equal(dl.v[0].msg, "invalid JSON: unexpected end of input");
    diag_list_free(&dl);
}

/* ---------------------------------------------------------------- the API */

static void test_free_is_iterative(void **state)
{
    (void)state;
    /* parsers never build this deep, but yv_free must not care */
    yv *root = NULL, **slot = &root;
    for (int k = 0; k < 300000; k++) {
        yv *v = xcalloc(1, sizeof *v);
        v->type = YV_SEQ;
        *slot = v;
        v->items = xmalloc(sizeof *v->items);
        v->items[0] = NULL;
        v->n = 1;
        slot = &v->items[0];
    }
    yv_free(root);
    yv_free(NULL);
}

static void test_helpers(void **state)
{
    (void)state;
    const yv_type t[] = {YV_NULL, YV_BOOL, YV_INT, YV_FLOAT, YV_STRING, YV_SEQ, YV_MAP};
    const char *names[] = {"null", "boolean", "integer", "float", "string", "list", "map"};
    for (size_t k = 0; k < 7; k++)
        assert_string_equal(yv_type_name(t[k]), names[k]);
    assert_int_equal(yv_default_limits.max_bytes, 1024 * 1024);
    assert_int_equal(yv_default_limits.max_depth, 32);
    assert_int_equal(yv_default_limits.max_nodes, 100000);

    yv *v = ok(YAML, "n: 3\nf: 2.5\ns: x\nl: [1]\n");
    double d = -1;
    assert_true(yv_number(yv_get(v, "n"), &d));
    assert_true(d == 3.0);
    assert_true(yv_number(yv_get(v, "f"), &d));
    assert_true(d == 2.5);
    assert_false(yv_number(yv_get(v, "s"), &d));
    assert_false(yv_number(NULL, &d));
    assert_null(yv_string(yv_get(v, "n")));
    assert_null(yv_string(NULL));
    assert_null(yv_get(NULL, "x"));
    assert_null(yv_at(v, 0)); /* a map is not a list */
    assert_null(yv_at(NULL, 0));
    assert_null(v->str);
    yv_free(v);
}

/* ---------------------------------------------------------------- yv_hash */

static unsigned long long hash_of(int fmt, const char *text, int line_offset)
{
    diag_list dl;
    diag_list_init(&dl);
    yv *v = parse(fmt, text, strlen(text), NULL, line_offset, &dl);
    if (!v || dl.n)
        fail_msg("parse of \"%s\" failed: %s", text, dl.n ? dl.v[0].msg : "(no message)");
    diag_list_free(&dl);
    unsigned long long h = yv_hash(v, HASH_SEED);
    yv_free(v);
    return h;
}

static void test_hash_ignores_positions(void **state)
{
    (void)state;
    const char *base = "title: Hello\ntags: [a, b]\nn: 1\nm: {x: 2.5, y: null}\n";
    unsigned long long h = hash_of(YAML, base, 0);
    assert_true(h == hash_of(YAML, base, 0));
    assert_true(h == hash_of(YAML, base, 1));    /* front matter after "---" */
    assert_true(h == hash_of(YAML, base, 1000)); /* further down a file */
    /* the same values written elsewhere on their lines, in block style, with
     * comments and blank lines around */
    assert_true(h == hash_of(YAML, "# c\n\ntitle:    Hello\ntags:\n  - a\n  - b\nn:  1   # one\n"
                                   "m:\n    x: 2.5\n    y: null\n\n",
                             0));
    assert_true(h == hash_of(YAML, "{title: Hello, tags: [a, b], n: 1, m: {x: 2.5, y: null}}", 3));
    /* the same tree from JSON: quoting is not part of the value */
    assert_true(h == hash_of(JSON, "{\"title\": \"Hello\", \"tags\": [\"a\", \"b\"], \"n\": 1,\n"
                                   " \"m\": {\"x\": 2.5, \"y\": null}}",
                             0));
    /* keys compare as text, quoted or not */
    assert_true(hash_of(YAML, "1: x\n", 0) == hash_of(YAML, "\"1\": x\n", 0));
}

static void test_hash_sees_values(void **state)
{
    (void)state;
    const char *base = "title: Hello\ntags: [a, b]\nn: 1\nm: {x: 2.5, y: null}\n";
    static const char *const others[] = {
        "title: Hello!\ntags: [a, b]\nn: 1\nm: {x: 2.5, y: null}\n",  /* a value */
        "title: Hello\ntags: [a, b]\nn: 2\nm: {x: 2.5, y: null}\n",   /* a number */
        "title: Hello\ntags: [a, c]\nn: 1\nm: {x: 2.5, y: null}\n",   /* an item */
        "titel: Hello\ntags: [a, b]\nn: 1\nm: {x: 2.5, y: null}\n",   /* a key */
        "title: Hello\ntags: [a, b]\nn: 1\nm: {z: 2.5, y: null}\n",   /* a nested key */
        "title: Hello\ntags: [a, b]\nn: '1'\nm: {x: 2.5, y: null}\n", /* "1" vs 1 */
        "title: Hello\ntags: [a, b]\nn: 1.0\nm: {x: 2.5, y: null}\n", /* 1.0 vs 1 */
        "title: Hello\ntags: [a, b]\nn: true\nm: {x: 2.5, y: null}\n",
        "title: Hello\ntags: [a, b]\nn: 1\nm: {x: 2.5, y: ''}\n",     /* "" vs null */
        "title: Hello\ntags: [b, a]\nn: 1\nm: {x: 2.5, y: null}\n",   /* item order */
        "title: Hello\ntags: [a, b, b]\nn: 1\nm: {x: 2.5, y: null}\n", /* an item more */
        "title: Hello\ntags: [a]\nn: 1\nm: {x: 2.5, y: null}\n",      /* an item less */
        "title: Hello\ntags: [a, b]\nn: 1\nm: {x: 2.5}\n",            /* a pair less */
        "title: Hello\ntags: [[a, b]]\nn: 1\nm: {x: 2.5, y: null}\n", /* nesting */
        "title: Hello\ntags: [[a], b]\nn: 1\nm: {x: 2.5, y: null}\n",
        "title: Hello\ntags: {a: b}\nn: 1\nm: {x: 2.5, y: null}\n",   /* seq vs map */
        "title: Hello\ntags: [a, b]\nn: 1\nm: {x: 2.5}\ny: null\n",   /* a pair moved out */
        "title: Hello\ntags: [a, b]\nn: 1\nm: [x, 2.5, y, null]\n",
        "title: Hello\ntags: ab\nn: 1\nm: {x: 2.5, y: null}\n",
        "title: Hello\ntags: [ab]\nn: 1\nm: {x: 2.5, y: null}\n",
    };
    unsigned long long h = hash_of(YAML, base, 0);
    for (size_t k = 0; k < sizeof others / sizeof *others; k++) {
        unsigned long long o = hash_of(YAML, others[k], 0);
        if (o == h)
            fail_msg("the same hash for\n%s", others[k]);
        /* and all different from each other */
        for (size_t j = 0; j < k; j++)
            if (hash_of(YAML, others[j], 0) == o)
                fail_msg("the same hash for\n%s\nand\n%s", others[j], others[k]);
    }
    /* the same scalars, nested differently */
    assert_true(hash_of(JSON, "[[1], 2]", 0) != hash_of(JSON, "[[1, 2]]", 0));
    assert_true(hash_of(JSON, "[[], [1]]", 0) != hash_of(JSON, "[[[1]]]", 0));
    assert_true(hash_of(JSON, "{\"a\": {\"b\": 1}, \"c\": 2}", 0) !=
                hash_of(JSON, "{\"a\": {\"b\": 1, \"c\": 2}}", 0));
    assert_true(hash_of(JSON, "[\"a\", \"b\"]", 0) != hash_of(JSON, "[\"ab\"]", 0));
    assert_true(hash_of(JSON, "[\"1\"]", 0) != hash_of(JSON, "[1]", 0));
    /* the running hash it starts from counts */
    yv *v = ok(YAML, base);
    assert_true(yv_hash(v, 1) != yv_hash(v, 2));
    yv_free(v);
}

/* yv_encode / yv_decode: the same tree back, positions and all; every cut
 * of the bytes and trailing garbage in a tree of its own are refused. */
/* A decoded tree lives in blocks (yv.h, pool): one that outgrows its first
 * block, a string larger than any block before it, a partial decode of it,
 * all freed by yv_free (AddressSanitizer checks the frees). */
static void test_decode_many_blocks(void **state)
{
    (void)state;
    buf text = BUF_INIT;
    for (int i = 0; i < 2000; i++)
        buf_printf(&text, "k%d: [%d, \"%0100d\", {x: y}]\n", i, i, i);
    buf_puts(&text, "long: \"");
    for (int i = 0; i < 40000; i++)
        buf_putc(&text, 'a' + i % 26);
    buf_puts(&text, "\"\n");
    diag_list dl;
    diag_list_init(&dl);
    yv_limits lim = {1 << 22, 32, 100000};
    yv *v = yv_parse_yaml(text.ptr, text.len, &lim, "big.yaml", 1, &dl);
    assert_non_null(v);
    buf b = BUF_INIT;
    yv_encode(v, &b);
    yv *back = NULL;
    assert_int_equal(yv_decode(b.ptr, b.len, &back), b.len);
    assert_non_null(back);
    assert_non_null(back->pool);
    assert_true(yv_hash(v, 1) == yv_hash(back, 1));
    assert_int_equal(yv_get(back, "long")->len, 40000);
    char want[128];
    snprintf(want, sizeof want, "%0100d", 1999);
    assert_string_equal(yv_get(back, "k1999")->items[1]->str, want);
    yv_free(back);
    yv *part = (yv *)1;
    assert_int_equal(yv_decode(b.ptr, b.len / 2, &part), 0);
    assert_null(part);
    assert_null(v->pool); /* a parsed tree is not in blocks */
    yv_free(v);
    buf_free(&b);
    buf_free(&text);
    diag_list_free(&dl);
}

static void test_encode_round_trip(void **state)
{
    (void)state;
    const char *text = "title: \"KV\"\nn: 42\nf: 1.5\nok: true\nnone: ~\n"
                       "tags: [a, \"b\", {x: [1, 2]}]\nnested:\n  deeper:\n    - -7\n";
    diag_list dl;
    diag_list_init(&dl);
    yv *v = yv_parse_yaml(text, strlen(text), NULL, "p.md", 1, &dl);
    assert_non_null(v);
    buf b = BUF_INIT;
    yv_encode(v, &b);
    yv *back = NULL;
    assert_int_equal(yv_decode(b.ptr, b.len, &back), b.len);
    assert_non_null(back);
    assert_true(yv_hash(v, 1) == yv_hash(back, 1));
    const yv *tags = yv_get(back, "tags");
    assert_non_null(tags);
    assert_int_equal(tags->line, yv_get(v, "tags")->line);
    assert_int_equal(tags->col, yv_get(v, "tags")->col);
    assert_int_equal(back->key_lines[1], v->key_lines[1]);
    assert_true(yv_get(back, "title")->quoted);
    assert_int_equal(yv_get(back, "n")->i, 42);
    assert_true(yv_get(back, "ok")->b);
    yv_free(back);
    for (size_t cut = 0; cut < b.len; cut++) {
        yv *part = (yv *)1;
        assert_int_equal(yv_decode(b.ptr, cut, &part), 0);
        assert_null(part);
    }
    /* flipped type bytes never crash */
    for (size_t i = 0; i < b.len; i++) {
        buf c = BUF_INIT;
        buf_put(&c, b.ptr, b.len);
        c.ptr[i] ^= 0x5a;
        yv *any = NULL;
        if (yv_decode(c.ptr, c.len, &any))
            yv_free(any);
        buf_free(&c);
    }
    buf_free(&b);
    yv_free(v);
    diag_list_free(&dl);
}

static void test_hash_deep_and_null(void **state)
{
    (void)state;
    /* depth 30, from YAML and JSON alike */
    buf b = BUF_INIT, c = BUF_INIT;
    for (int k = 0; k < 30; k++)
        buf_putc(&b, '[');
    buf_puts(&b, "1");
    for (int k = 0; k < 30; k++)
        buf_putc(&b, ']');
    unsigned long long h30 = hash_of(YAML, b.ptr, 0);
    assert_true(h30 == hash_of(JSON, b.ptr, 0));
    assert_true(h30 == hash_of(YAML, b.ptr, 7));
    buf_puts(&c, b.ptr + 1);
    buf_truncate(&c, c.len - 1); /* depth 29 */
    assert_true(h30 != hash_of(YAML, c.ptr, 0));
    /* depth 30 in block maps */
    buf_clear(&b);
    for (int k = 0; k < 30; k++) {
        for (int i = 0; i < k; i++)
            buf_puts(&b, "  ");
        buf_printf(&b, "k%d:%s\n", k, k == 29 ? " leaf" : "");
    }
    unsigned long long m30 = hash_of(YAML, b.ptr, 0);
    assert_true(m30 == hash_of(YAML, b.ptr, 3));
    buf_free(&b);
    buf_free(&c);

    /* far deeper than parsers go: no recursion */
    yv *root = NULL, **slot = &root;
    for (int k = 0; k < 300000; k++) {
        yv *v = xcalloc(1, sizeof *v);
        v->type = YV_SEQ;
        *slot = v;
        v->items = xmalloc(sizeof *v->items);
        v->n = 1;
        slot = &v->items[0];
    }
    *slot = xcalloc(1, sizeof **slot); /* a YV_NULL leaf */
    unsigned long long deep = yv_hash(root, HASH_SEED);
    assert_true(deep == yv_hash(root, HASH_SEED));
    yv_free(root);

    /* NULL is a value of its own */
    unsigned long long n = yv_hash(NULL, HASH_SEED);
    assert_true(n == yv_hash(NULL, HASH_SEED));
    assert_true(n != HASH_SEED);
    yv *empty = ok(YAML, "");
    assert_true(yv_hash(empty, HASH_SEED) != n);
    yv_free(empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yaml_scalars),
        cmocka_unit_test(test_yaml_nan),
        cmocka_unit_test(test_yaml_nested_positions),
        cmocka_unit_test(test_yaml_columns_count_bytes),
        cmocka_unit_test(test_yaml_line_offset),
        cmocka_unit_test(test_yaml_empty_and_roots),
        cmocka_unit_test(test_yaml_standard_tags_on_collections),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_nul_bytes),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_alias_bomb),
        cmocka_unit_test(test_wide_map),
        cmocka_unit_test(test_json_values),
        cmocka_unit_test(test_json_escapes),
        cmocka_unit_test(test_csv_basic),
        cmocka_unit_test(test_csv_quoting),
        cmocka_unit_test(test_long_key_message),
        cmocka_unit_test(test_null_text),
        cmocka_unit_test(test_free_is_iterative),
        cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_hash_ignores_positions),
        cmocka_unit_test(test_hash_sees_values),
        cmocka_unit_test(test_hash_deep_and_null),
        cmocka_unit_test(test_encode_round_trip),
        cmocka_unit_test(test_decode_many_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
