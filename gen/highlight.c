#include "highlight.h"

#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tree_sitter/api.h>

/* The grammars of tools/npm, compiled by the Makefile into build/ts/, and
 * their highlights.scm, embedded as strings (build/ts/queries.c). */
const TSLanguage *tree_sitter_lua(void);
const TSLanguage *tree_sitter_c(void);
const TSLanguage *tree_sitter_bash(void);
const TSLanguage *tree_sitter_yaml(void);
const TSLanguage *tree_sitter_json(void);
const TSLanguage *tree_sitter_python(void);
const TSLanguage *tree_sitter_markdown(void);
extern const char hl_query_lua[], hl_query_c[], hl_query_bash[], hl_query_yaml[],
    hl_query_json[], hl_query_python[], hl_query_markdown[];

/* Kinds of token; K_NONE is the queries' @none (it clears an outer
 * capture), K_SKIP a capture name that is not coloured at all. */
enum { K_SKIP = -1, K_NONE = 0, K_COMMENT, K_STRING, K_CONSTANT, K_KEYWORD, K_FUNCTION,
       K_TYPE, K_PROPERTY, K_HEADING, K_LINK, K_PUNCT };
static const char *const S_kind_class[] = {NULL, "hl-comment", "hl-string", "hl-constant",
                                           "hl-keyword", "hl-function", "hl-type",
                                           "hl-property", "hl-heading", "hl-link", "hl-punct"};

/* Capture names, the longest prefix first (a name matches an entry when it
 * equals it or continues it with a dot). */
static const struct {
    const char *name;
    int kind;
} S_capture_kinds[] = {
    {"string.special.key", K_PROPERTY}, {"punctuation.special", K_PUNCT},
    {"variable.builtin", K_KEYWORD},    {"text.title", K_HEADING},
    {"text.literal", K_STRING},         {"text.uri", K_LINK},
    {"text.reference", K_PROPERTY},     {"none", K_NONE},
    {"embedded", K_NONE},               {"comment", K_COMMENT},
    {"string", K_STRING},               {"escape", K_STRING},
    {"character", K_STRING},            {"number", K_CONSTANT},
    {"float", K_CONSTANT},              {"boolean", K_CONSTANT},
    {"constant", K_CONSTANT},           {"keyword", K_KEYWORD},
    {"conditional", K_KEYWORD},         {"repeat", K_KEYWORD},
    {"include", K_KEYWORD},             {"exception", K_KEYWORD},
    {"preproc", K_KEYWORD},             {"function", K_FUNCTION},
    {"method", K_FUNCTION},
    {"type", K_TYPE},                   {"property", K_PROPERTY},
    {"field", K_PROPERTY},              {"attribute", K_PROPERTY},
    {"label", K_PROPERTY},
};

typedef enum { P_EQ, P_MATCH, P_ANY } pred_op;

/* One text predicate of a pattern: #eq?, #match?, #any-of? and their not-
 * forms. Predicates the module does not know hold. */
typedef struct {
    pred_op op;
    bool negate;
    uint32_t cap;      /* the capture tested */
    int64_t other;     /* #eq? @a @b: b's capture id, else -1 */
    const char *str;   /* #eq?'s string (the query owns it) */
    regex_t re;        /* #match? */
    bool re_ok;        /* false: a pattern POSIX cannot express; the predicate fails */
    const char **any;  /* #any-of?'s strings (the query owns them) */
    uint32_t nany;
} pred;

typedef struct {
    const char *const names[5]; /* fence names, NULL-terminated */
    const TSLanguage *(*lang)(void);
    const char *query_src;
    bool later_wins;   /* between patterns on one node (see hl_html) */
    /* set once, under S_lock, by S_load */
    bool loaded;
    TSQuery *q;        /* NULL: the query did not compile; the language stays plain */
    int8_t *kind;      /* per capture id */
    pred **preds;      /* per pattern */
    uint32_t *npreds;
} language;

#define LANG(lw, fn, ...) {.names = {__VA_ARGS__, NULL}, .lang = tree_sitter_##fn, \
                           .query_src = hl_query_##fn, .later_wins = lw}
static language S_langs[] = {
    LANG(true, lua, "lua"),
    LANG(false, c, "c", "h"),
    LANG(false, bash, "sh", "bash", "shell", "zsh"),
    LANG(true, yaml, "yaml", "yml"),
    LANG(false, json, "json"),
    LANG(false, python, "python", "py"),
    LANG(true, markdown, "markdown", "md"),
};
#undef LANG
#define NLANGS (sizeof S_langs / sizeof S_langs[0])

static pthread_mutex_t S_lock = PTHREAD_MUTEX_INITIALIZER;

static language *S_find(const char *lang, size_t n)
{
    for (size_t i = 0; i < NLANGS; i++)
        for (const char *const *nm = S_langs[i].names; *nm; nm++)
            if (strlen(*nm) == n && strncasecmp(*nm, lang, n) == 0)
                return &S_langs[i];
    return NULL;
}

bool hl_known(const char *lang, size_t lang_len) { return S_find(lang, lang_len) != NULL; }

static int S_kind_of(const char *name)
{
    for (size_t i = 0; i < sizeof S_capture_kinds / sizeof S_capture_kinds[0]; i++) {
        size_t n = strlen(S_capture_kinds[i].name);
        if (strncmp(name, S_capture_kinds[i].name, n) == 0 && (name[n] == '\0' || name[n] == '.'))
            return S_capture_kinds[i].kind;
    }
    return K_SKIP;
}

/* The queries' regular expressions are Rust's; the ones they use are POSIX
 * extended ones but for the classes \d \w \s, written here as POSIX classes
 * (inside brackets without their own brackets). Other escapes stay. */
static void S_posix_regex(const char *re, buf *out)
{
    bool in_bracket = false;
    for (const char *p = re; *p; p++) {
        if (*p == '\\' && p[1]) {
            char c = *++p;
            const char *cls = c == 'd'   ? "0-9"
                              : c == 'w' ? "[:alnum:]_"
                              : c == 's' ? "[:space:]"
                                         : NULL;
            if (cls && in_bracket) {
                buf_puts(out, cls);
            } else if (cls) {
                buf_putc(out, '[');
                buf_puts(out, cls);
                buf_putc(out, ']');
            } else if (in_bracket) {
                buf_putc(out, c); /* POSIX brackets take no escapes */
            } else {
                buf_putc(out, '\\');
                buf_putc(out, c);
            }
            continue;
        }
        if (*p == '[' && !in_bracket) {
            in_bracket = true;
            buf_putc(out, '[');
            if (p[1] == '^')
                buf_putc(out, *++p);
            if (p[1] == ']')
                buf_putc(out, *++p);
            continue;
        }
        if (*p == ']' && in_bracket)
            in_bracket = false;
        buf_putc(out, *p);
    }
}

/* Reads pattern pi's predicates from the query's steps. */
static void S_load_preds(language *l, uint32_t pi)
{
    uint32_t nsteps = 0;
    const TSQueryPredicateStep *st = ts_query_predicates_for_pattern(l->q, pi, &nsteps);
    uint32_t i = 0;
    while (i < nsteps) {
        uint32_t end = i;
        while (end < nsteps && st[end].type != TSQueryPredicateStepTypeDone)
            end++;
        /* st[i] the operator, st[i+1] the capture, then the arguments */
        if (end - i >= 3 && st[i].type == TSQueryPredicateStepTypeString &&
            st[i + 1].type == TSQueryPredicateStepTypeCapture) {
            uint32_t slen;
            const char *op = ts_query_string_value_for_id(l->q, st[i].value_id, &slen);
            bool neg = strncmp(op, "not-", 4) == 0;
            const char *base = neg ? op + 4 : op;
            pred p = {0};
            p.negate = neg;
            p.cap = st[i + 1].value_id;
            p.other = -1;
            bool known = true;
            if (strcmp(base, "eq?") == 0 && end - i == 3) {
                p.op = P_EQ;
                if (st[i + 2].type == TSQueryPredicateStepTypeCapture)
                    p.other = st[i + 2].value_id;
                else
                    p.str = ts_query_string_value_for_id(l->q, st[i + 2].value_id, &slen);
            } else if (strcmp(base, "match?") == 0 && end - i == 3 &&
                       st[i + 2].type == TSQueryPredicateStepTypeString) {
                p.op = P_MATCH;
                buf rx = BUF_INIT;
                S_posix_regex(ts_query_string_value_for_id(l->q, st[i + 2].value_id, &slen), &rx);
                p.re_ok = regcomp(&p.re, buf_cstr(&rx), REG_EXTENDED | REG_NOSUB) == 0;
                buf_free(&rx);
            } else if (strcmp(base, "any-of?") == 0) {
                p.op = P_ANY;
                p.nany = end - i - 2;
                p.any = xcalloc(p.nany, sizeof *p.any);
                for (uint32_t k = 0; k < p.nany; k++)
                    p.any[k] = ts_query_string_value_for_id(l->q, st[i + 2 + k].value_id, &slen);
            } else {
                known = false;
            }
            if (known) {
                l->preds[pi] = xrealloc(l->preds[pi], (l->npreds[pi] + 1) * sizeof(pred));
                l->preds[pi][l->npreds[pi]++] = p;
            }
        }
        i = end + 1;
    }
}

/* Turns pattern pi off when every capture it has is one the painter skips
 * (@variable, @operator, @punctuation.bracket, ...): matched on most nodes,
 * it would paint nothing. */
static void S_skip_unpainted(language *l, uint32_t pi, uint32_t ncap)
{
    bool any = false;
    for (uint32_t c = 0; c < ncap; c++) {
        if (ts_query_capture_quantifier_for_id(l->q, pi, c) == TSQuantifierZero)
            continue;
        if (l->kind[c] != K_SKIP)
            return;
        any = true;
    }
    if (any)
        ts_query_disable_pattern(l->q, pi);
}

/* Compiles l's query, once; the result is kept for the life of the process. */
static bool S_load(language *l)
{
    pthread_mutex_lock(&S_lock);
    if (!l->loaded) {
        uint32_t err_off;
        TSQueryError err;
        l->q = ts_query_new(l->lang(), l->query_src, (uint32_t)strlen(l->query_src), &err_off,
                            &err);
        if (l->q) {
            uint32_t ncap = ts_query_capture_count(l->q);
            uint32_t npat = ts_query_pattern_count(l->q);
            l->kind = xcalloc(ncap + 1, 1);
            for (uint32_t c = 0; c < ncap; c++) {
                uint32_t n;
                l->kind[c] = (int8_t)S_kind_of(ts_query_capture_name_for_id(l->q, c, &n));
            }
            l->preds = xcalloc(npat + 1, sizeof *l->preds);
            l->npreds = xcalloc(npat + 1, sizeof *l->npreds);
            for (uint32_t p = 0; p < npat; p++) {
                S_load_preds(l, p);
                S_skip_unpainted(l, p, ncap);
            }
        }
        l->loaded = true;
    }
    pthread_mutex_unlock(&S_lock);
    return l->q != NULL;
}

void hl_preload(void)
{
    for (size_t i = 0; i < NLANGS; i++)
        S_load(&S_langs[i]);
}

static pthread_t S_preloader;
static bool S_preloading;
static atomic_bool S_preload_stop;

static void *S_preload_main(void *arg)
{
    (void)arg;
    for (size_t i = 0; i < NLANGS && !atomic_load(&S_preload_stop); i++)
        S_load(&S_langs[i]);
    return NULL;
}

void hl_preload_start(void)
{
    if (S_preloading)
        return;
    atomic_store(&S_preload_stop, false);
    S_preloading = pthread_create(&S_preloader, NULL, S_preload_main, NULL) == 0;
}

void hl_preload_join(void)
{
    if (!S_preloading)
        return;
    atomic_store(&S_preload_stop, true);
    pthread_join(S_preloader, NULL);
    S_preloading = false;
}

static bool S_capture_text(const TSQueryMatch *m, uint32_t cap, const char *code, size_t len,
                           const char **s, size_t *n)
{
    for (uint16_t i = 0; i < m->capture_count; i++) {
        if (m->captures[i].index != cap)
            continue;
        uint32_t a = ts_node_start_byte(m->captures[i].node);
        uint32_t b = ts_node_end_byte(m->captures[i].node);
        if (b > len || a > b)
            return false;
        *s = code + a;
        *n = b - a;
        return true;
    }
    return false;
}

static bool S_pred_holds(const pred *p, const TSQueryMatch *m, const char *code, size_t len)
{
    const char *s;
    size_t n;
    if (!S_capture_text(m, p->cap, code, len, &s, &n))
        return true; /* the capture is not in this match: nothing to test */
    bool r = false;
    switch (p->op) {
    case P_EQ:
        if (p->other >= 0) {
            const char *o;
            size_t on;
            r = S_capture_text(m, (uint32_t)p->other, code, len, &o, &on) && on == n &&
                memcmp(o, s, n) == 0;
        } else {
            r = strlen(p->str) == n && memcmp(p->str, s, n) == 0;
        }
        break;
    case P_MATCH: {
        if (!p->re_ok || n > 4096)
            return false;
        /* the capture's bytes where they are: no copy to end them */
        regmatch_t span = {.rm_so = 0, .rm_eo = (regoff_t)n};
        r = regexec(&p->re, s, 1, &span, REG_STARTEND) == 0;
        break;
    }
    case P_ANY:
        for (uint32_t k = 0; k < p->nany && !r; k++)
            r = strlen(p->any[k]) == n && memcmp(p->any[k], s, n) == 0;
        break;
    }
    return p->negate ? !r : r;
}

/* One parser and one query cursor a thread, kept from block to block: their
 * buffers (the parse stack, the pool of freed subtrees, the cursor's states)
 * stay allocated and in the caches. Freed when the thread ends. */
typedef struct {
    TSParser *parser;
    TSQueryCursor *cursor;
} hl_tools;

static pthread_key_t S_tools_key;
static pthread_once_t S_tools_once = PTHREAD_ONCE_INIT;

static void S_tools_free(void *p)
{
    hl_tools *t = p;
    ts_parser_delete(t->parser);
    ts_query_cursor_delete(t->cursor);
    free(t);
}

static void S_tools_key_make(void)
{
    if (pthread_key_create(&S_tools_key, S_tools_free) != 0)
        abort();
}

static hl_tools *S_tools(void)
{
    pthread_once(&S_tools_once, S_tools_key_make);
    hl_tools *t = pthread_getspecific(S_tools_key);
    if (!t) {
        t = xmalloc(sizeof *t);
        t->parser = ts_parser_new();
        ts_parser_set_timeout_micros(t->parser, HL_TIMEOUT_US);
        t->cursor = ts_query_cursor_new();
        ts_query_cursor_set_match_limit(t->cursor, 1024);
        if (pthread_setspecific(S_tools_key, t) != 0)
            abort();
    }
    return t;
}

static void S_put_run(buf *out, int kind, const char *s, size_t n)
{
    if (kind > K_NONE) {
        buf_puts(out, "<span class=\"");
        buf_puts(out, S_kind_class[kind]);
        buf_puts(out, "\">");
    }
    buf_put_html(out, s, n);
    if (kind > K_NONE)
        buf_puts(out, "</span>");
}

bool hl_html(const char *lang, size_t lang_len, const char *code, size_t len, buf *out)
{
    language *l = S_find(lang, lang_len);
    if (!l || len == 0 || len > HL_MAX_BYTES || !S_load(l))
        return false;
    hl_tools *t = S_tools();
    TSParser *ps = t->parser;
    TSQueryCursor *cur = t->cursor;
    TSTree *tree = NULL;
    if (ts_parser_set_language(ps, l->lang()))
        tree = ts_parser_parse_string(ps, NULL, code, (uint32_t)len);
    if (!tree) {
        ts_parser_reset(ps); /* a parse that timed out would resume on the next block */
        return false;
    }

    /* Each byte takes the kind of the smallest capture over it (a string's
     * escape inside the string). Between captures of one node, the query's
     * first pattern wins in the tree-sitter project's grammars (as its own
     * highlighter has it), the last one in the tree-sitter-grammars ones
     * (written for Neovim, general patterns before the special cases). */
    int8_t *kind = xcalloc(len, 1);
    uint32_t *span = xmalloc(len * sizeof *span);
    uint32_t *pat = xmalloc(len * sizeof *pat);
    for (size_t i = 0; i < len; i++) {
        span[i] = UINT32_MAX;
        pat[i] = UINT32_MAX;
    }
    /* bound on the bytes painted: nested captures cost their depth */
    size_t work = 0, max_work = 64 * len + 4096;
    bool ok = true;
    ts_query_cursor_exec(cur, l->q, ts_tree_root_node(tree));
    TSQueryMatch m;
    uint32_t ci;
    while (ts_query_cursor_next_capture(cur, &m, &ci)) {
        const TSQueryCapture *c = &m.captures[ci];
        int k = l->kind[c->index];
        if (k == K_SKIP)
            continue;
        bool holds = true;
        for (uint32_t i = 0; i < l->npreds[m.pattern_index] && holds; i++)
            holds = S_pred_holds(&l->preds[m.pattern_index][i], &m, code, len);
        if (!holds)
            continue;
        uint32_t a = ts_node_start_byte(c->node), b = ts_node_end_byte(c->node);
        if (b > len)
            b = (uint32_t)len;
        if (a >= b)
            continue;
        work += b - a;
        if (work > max_work) {
            ok = false;
            break;
        }
        uint32_t n = b - a;
        for (uint32_t i = a; i < b; i++) {
            bool wins = n < span[i] ||
                        (n == span[i] && (l->later_wins ? m.pattern_index >= pat[i]
                                                        : m.pattern_index < pat[i]));
            if (wins) {
                span[i] = n;
                pat[i] = m.pattern_index;
                kind[i] = (int8_t)k;
            }
        }
    }
    ts_tree_delete(tree);
    if (ok) {
        size_t run = 0;
        for (size_t i = 1; i <= len; i++) {
            if (i == len || kind[i] != kind[run]) {
                S_put_run(out, kind[run], code + run, i - run);
                run = i;
            }
        }
    }
    free(kind);
    free(span);
    free(pat);
    return ok;
}
