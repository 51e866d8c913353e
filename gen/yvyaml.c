/* yvyaml: yv_parse_yaml (yv.h), driven by libyaml's event parser. The
 * events build the tree through yv_build.h's builder; what this file adds is
 * the safe subset of YAML (no anchors, aliases, odd tags or second document)
 * and libyaml's character positions turned into byte columns. */
#include "yv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "buf.h"
#include "yv_build.h"

/* libyaml counts marks in characters; diagnostics count bytes. A cursor maps
 * a character index to its byte offset, walking from where it last stood:
 * events come in document order, so the walk is linear overall. */
typedef struct {
    const unsigned char *s;
    size_t len, base; /* base: where character 0 starts (after a BOM) */
    size_t ci, bi;
} S_cursor;

static size_t S_cursor_seek(S_cursor *c, size_t ci)
{
    while (c->ci < ci && c->bi < c->len) {
        c->bi++;
        while (c->bi < c->len && (c->s[c->bi] & 0xC0) == 0x80)
            c->bi++;
        c->ci++;
    }
    while (c->ci > ci && c->bi > c->base) {
        c->bi--;
        while (c->bi > c->base && (c->s[c->bi] & 0xC0) == 0x80)
            c->bi--;
        c->ci--;
    }
    return c->bi;
}

typedef struct {
    yvb_builder b;
    S_cursor at, line_start; /* two cursors, each moving mostly forward */
    int line_offset;
    const char *text;
    int docs;
} S_yaml;

static void S_yaml_pos(S_yaml *y, yaml_mark_t m, int *line, int *col)
{
    size_t at = S_cursor_seek(&y->at, m.index);
    size_t start = S_cursor_seek(&y->line_start, m.index >= m.column ? m.index - m.column : 0);
    *line = yvb_clamp((long long)m.line + 1 + y->line_offset);
    *col = yvb_clamp((long long)(at - start) + 1);
}

static void S_yaml_syntax_error(S_yaml *y, const yaml_parser_t *p)
{
    int line, col;
    if (p->error == YAML_MEMORY_ERROR) {
        diag_error(y->b.dl, y->b.file, 0, 0, "out of memory while parsing YAML");
        return;
    }
    if (p->error == YAML_READER_ERROR)
        yvb_pos_of(y->text, p->problem_offset, y->line_offset, &line, &col);
    else
        S_yaml_pos(y, p->problem_mark, &line, &col);
    diag_error(y->b.dl, y->b.file, line, col, "invalid YAML: %s",
               p->problem ? p->problem : "syntax error");
}

#define S_YAML_TAG "tag:yaml.org,2002:"

/* The standard tag t names (the part after "!!"), or NULL for any other. */
static const char *S_std_tag(const char *t)
{
    static const char *const known[] = {"str", "int", "float", "bool", "null", "seq", "map", NULL};
    size_t n = strlen(S_YAML_TAG);
    if (strncmp(t, S_YAML_TAG, n) != 0 || !yvb_is_one_of(t + n, known))
        return NULL;
    return t + n;
}

static int S_yaml_bad_tag(S_yaml *y, const char *tag, int line, int col)
{
    size_t n = strlen(S_YAML_TAG);
    bool std = strncmp(tag, S_YAML_TAG, n) == 0;
    char *q = std ? xasprintf("!!%s", tag + n) : xstrdup(tag);
    char *qq = yvb_quoted(q, strlen(q));
    diag_error(y->b.dl, y->b.file, line, col, "unsupported YAML tag %s here", qq);
    free(qq);
    free(q);
    return -1;
}

/* A tag on a collection may only restate what it is. */
static int S_yaml_collection_tag(S_yaml *y, const yaml_char_t *tag, yv_type t, int line, int col)
{
    if (!tag || strcmp((const char *)tag, "!") == 0)
        return 0;
    const char *std = S_std_tag((const char *)tag);
    if (std && strcmp(std, t == YV_SEQ ? "seq" : "map") == 0)
        return 0;
    return S_yaml_bad_tag(y, (const char *)tag, line, col);
}

static int S_yaml_scalar(S_yaml *y, const yaml_event_t *e, int line, int col)
{
    yvb_builder *b = &y->b;
    const char *val = (const char *)e->data.scalar.value;
    size_t len = e->data.scalar.length;
    const char *tag = (const char *)e->data.scalar.tag;
    const char *std = NULL;
    if (memchr(val, '\0', len)) {
        diag_error(b->dl, b->file, line, col, "NUL character in string");
        return -1;
    }
    if (tag && strcmp(tag, "!") != 0) {
        std = S_std_tag(tag);
        if (!std || strcmp(std, "seq") == 0 || strcmp(std, "map") == 0)
            return S_yaml_bad_tag(y, tag, line, col);
    }
    if (yvb_want_key(b)) {
        yvb_key(b, val, len, line, col); /* keys are text, whatever they look like */
        return 0;
    }
    yv *v = yvb_scalar(b, val, len, line, col);
    if (!v)
        return -1;
    v->quoted = e->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                e->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    if (!tag) {
        if (e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            yvb_resolve(v);
        return 0;
    }
    if (!std || strcmp(std, "str") == 0)
        return 0; /* "!" or "!!str": a string */
    yvb_resolve(v);
    if (strcmp(std, "float") == 0 && v->type == YV_INT) {
        v->type = YV_FLOAT;
        v->f = (double)v->i;
    }
    static const struct {
        const char *tag;
        yv_type type;
    } want[] = {{"int", YV_INT}, {"float", YV_FLOAT}, {"bool", YV_BOOL}, {"null", YV_NULL}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        if (strcmp(std, want[k].tag) == 0 && v->type != want[k].type) {
            char *q = yvb_quoted(val, len);
            diag_error(b->dl, b->file, line, col, "%s is not a valid !!%s", q, std);
            free(q);
            return -1;
        }
    }
    return 0;
}

static int S_yaml_open(S_yaml *y, const yaml_event_t *e, int line, int col)
{
    yvb_builder *b = &y->b;
    bool seq = e->type == YAML_SEQUENCE_START_EVENT;
    const yaml_char_t *anchor = seq ? e->data.sequence_start.anchor : e->data.mapping_start.anchor;
    const yaml_char_t *tag = seq ? e->data.sequence_start.tag : e->data.mapping_start.tag;
    yv_type t = seq ? YV_SEQ : YV_MAP;
    if (anchor) {
        diag_error(b->dl, b->file, line, col, "YAML anchors are not supported");
        return -1;
    }
    if (yvb_want_key(b)) {
        diag_error(b->dl, b->file, line, col, "YAML map keys must be scalars, not a %s",
                   yv_type_name(t));
        return -1;
    }
    if (S_yaml_collection_tag(y, tag, t, line, col) < 0)
        return -1;
    return yvb_open(b, t, line, col) ? 0 : -1;
}

/* One event; 1 at the end of the stream, -1 on error. */
static int S_yaml_event(S_yaml *y, const yaml_event_t *e)
{
    yvb_builder *b = &y->b;
    int line, col;
    S_yaml_pos(y, e->start_mark, &line, &col);
    switch (e->type) {
    case YAML_STREAM_END_EVENT:
        return 1;
    case YAML_DOCUMENT_START_EVENT:
        if (++y->docs > 1) {
            diag_error(b->dl, b->file, line, col, "more than one YAML document");
            return -1;
        }
        return 0;
    case YAML_ALIAS_EVENT:
        diag_error(b->dl, b->file, line, col, "YAML aliases are not supported");
        return -1;
    case YAML_SCALAR_EVENT:
        if (e->data.scalar.anchor) {
            diag_error(b->dl, b->file, line, col, "YAML anchors are not supported");
            return -1;
        }
        return S_yaml_scalar(y, e, line, col);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        return S_yaml_open(y, e, line, col);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return yvb_close(b, true);
    default:
        return 0;
    }
}

yv *yv_parse_yaml(const char *text, size_t len, const yv_limits *lim, const char *file,
                  int line_offset, diag_list *dl)
{
    if (yvb_input(&text, len, &lim, file, line_offset, dl) < 0)
        return NULL;
    S_yaml y;
    memset(&y, 0, sizeof y);
    yvb_init(&y.b, lim, file, dl);
    y.text = text;
    y.line_offset = line_offset;
    /* libyaml skips a UTF-8 BOM before it counts characters */
    size_t base = yvb_has_bom(text, len) ? 3 : 0;
    y.at = (S_cursor){(const unsigned char *)text, len, base, 0, base};
    y.line_start = y.at;

    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        diag_error(dl, file, 0, 0, "out of memory while parsing YAML");
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = 0;
    while (rc == 0) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            S_yaml_syntax_error(&y, &p);
            rc = -1;
            break;
        }
        rc = S_yaml_event(&y, &e);
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&p);
    if (rc < 0)
        return yvb_fail(&y.b);

    yv *root = yvb_done(&y.b);
    if (root && root->type == YV_NULL && root->len == 0) {
        /* "---" and nothing else: as empty as no document at all */
        yv_free(root);
        root = NULL;
    }
    if (!root) {
        root = xcalloc(1, sizeof *root);
        root->type = YV_MAP;
        root->line = yvb_clamp(1LL + line_offset);
        root->col = 1;
    }
    return root;
}
