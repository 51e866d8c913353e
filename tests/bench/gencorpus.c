/* gencorpus: writes the `make bench` corpus (issue 7).
 *
 *   gencorpus OUTDIR PAGES [--figures] [--sections N]
 *
 * OUTDIR must be missing or empty. It receives two projects over the same
 * Markdown bytes, so kvsite and Hugo build the same content:
 *   OUTDIR/kvsite/  site.yaml, templates/ (page, section, home, tag, tags,
 *                   checks, 404 .html), content/
 *   OUTDIR/hugo/    hugo.toml, layouts/, content/
 * content/ holds _index.md (home), sections s00..s19 (fewer when PAGES < 20;
 * --sections N: N of them, 1..20, so a corpus can put every page in one
 * section) with an _index.md each, and the pages: page i is sNN/pIIIII.md,
 * NN = i % the number of sections.
 *
 * A page is about 4 KB: YAML front matter (title, date, tags, summary,
 * weight), English and Chinese prose, headings, a GFM table, a fenced code
 * block, a task list and relative links to other pages and sections of the
 * corpus (all valid). --figures keeps the same page text and adds one
 * ```{lua} block that sets the page's shape variables plus 20 quoted figures
 * whose quotes are exact for their expressions (see S_figures).
 *
 * Deterministic: each page draws from its own PRNG stream, seeded from a fixed
 * constant and the page number, so the same arguments give a byte-identical
 * tree. Self-contained on purpose (no gen/ sources): the benchmark must build
 * while the generator is half-written.
 *
 * Exit status: 0 done, 1 I/O error, 2 usage error. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_PAGES 100000u
#define MAX_SECTIONS 20u
#define MAX_OUTDIR 1024u   /* leaves room for the longest path we append */
#define PAGE_TARGET 3750u  /* base page bytes before the last filler paragraph */
#define PAGE_SPREAD 300u
#define SEED_TEXT 0x6b7673697465u /* "kvsite" */
#define SEED_FIGS 0x626563686b76u /* a second stream: figures never shift the text */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- a small growable string: this program's only allocation ---- */

typedef struct {
    char *p;
    size_t len, cap;
} sb;

static void S_die_oom(void)
{
    fputs("gencorpus: out of memory\n", stderr);
    exit(1);
}

static void S_grow(sb *b, size_t extra)
{
    if (extra > SIZE_MAX / 4 - b->len)
        S_die_oom();
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        S_die_oom();
    b->p = p;
    b->cap = cap;
}

static void S_put(sb *b, const char *s, size_t n)
{
    S_grow(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void S_puts(sb *b, const char *s) { S_put(b, s, strlen(s)); }

static void S_clear(sb *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

static void S_printf(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void S_printf(sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        S_die_oom();
    S_grow(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- PRNG: splitmix64, one 64-bit state per stream ---- */

typedef struct {
    uint64_t s;
} rng;

static uint64_t S_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static unsigned S_below(rng *r, unsigned n) { return (unsigned)(S_next(r) % n); }

#define PICK(r, arr) ((arr)[S_below((r), (unsigned)COUNT(arr))])

/* ---- word banks (our own generic prose; no Markdown specials in them) ---- */

static const char *const en_open[] = {
    "In practice,", "Most of the time,", "On a busy server,", "During decoding,",
    "For long contexts,", "By design,", "Later on,", "Under load,",
};
static const char *const en_subj[] = {
    "the key cache", "the value cache", "every attention layer", "a paged allocator",
    "the scheduler", "the decode loop", "a long prompt", "the prefill pass",
    "each request", "the block table", "a quantized cache", "the sliding window",
    "the host memory pool", "the GPU", "a shared prefix", "the eviction policy",
    "the batch", "one sequence", "the memory planner", "a grouped query head",
};
static const char *const en_verb[] = {
    "keeps", "reads", "writes", "evicts", "copies", "reuses", "shrinks", "streams",
    "pins", "maps", "splits", "compresses", "tracks", "allocates", "frees", "scans",
};
static const char *const en_obj[] = {
    "the oldest blocks", "every cached token", "the recent window",
    "a fixed number of pages", "the attention sinks", "the scales and zero points",
    "the shared prefix", "one block per layer", "the latent vectors",
    "most of the bandwidth", "the whole context", "a small working set",
    "the hot entries", "the free list", "cold pages", "the per token state",
};
static const char *const en_tail[] = {
    "before the next decode step", "when memory runs short", "without touching the weights",
    "so that the batch can grow", "at the cost of some latency", "while the kernel waits",
    "once the prompt is done", "for every new token", "under a fixed budget",
    "across all requests", "in the same order every time", "unless the window slides",
    "long after the prompt ends", "as the context grows",
};
static const char *const zh_open[] = {
    "实际上，", "大多数时候，", "在繁忙的服务器上，", "解码期间，", "对于长上下文，",
    "按照设计，", "负载升高以后，",
};
static const char *const zh_subj[] = {
    "键值缓存", "每一层注意力", "分页分配器", "调度器", "解码循环", "长提示词",
    "预填充阶段", "每个请求", "块表", "量化后的缓存", "滑动窗口", "主机内存池",
    "GPU 显存", "共享前缀", "淘汰策略", "这一批请求", "单条序列", "内存规划器",
    "PagedAttention 分配器", "KV cache 管理器",
};
static const char *const zh_adv[] = {
    "在下一步解码之前", "在显存紧张时", "在不改动权重的情况下", "为了让批次变大",
    "以少量延迟为代价", "在内核等待时", "在提示词处理完之后", "对每个新词元",
    "在固定预算之内", "在所有请求之间", "随着上下文变长", "每隔几步",
};
static const char *const zh_verb[] = {
    "保存", "读取", "写入", "淘汰", "复制", "复用", "压缩", "搬运",
    "固定", "映射", "拆分", "跟踪", "分配", "释放", "扫描", "合并",
};
static const char *const zh_obj[] = {
    "最旧的块", "所有已缓存的词元", "最近的窗口", "固定数量的页", "注意力汇聚词元",
    "量化的缩放因子", "共享的前缀", "每层一个块", "潜在向量", "大部分带宽",
    "整个上下文", "较小的工作集", "热点条目", "空闲链表", "冷页面", "每个词元的状态",
};
static const char *const headings[] = {
    "Why the cache grows", "Where the bytes go", "Paging and fragmentation",
    "Eviction under pressure", "Quantized values", "Sharing a prefix",
    "Offloading to host memory", "Reading less per step", "Measuring it",
    "缓存为什么会增长", "字节都去了哪里", "分页与碎片", "显存紧张时的淘汰",
    "量化的代价", "共享前缀", "卸载到主机内存", "每步少读一些", "小结",
};
static const char *const tags[] = {
    "kv-cache", "gpu", "memory", "paging", "eviction", "quantization", "attention",
    "scheduling", "prefix-cache", "offload", "long-context", "mla", "gqa",
    "sliding-window", "bandwidth", "latency", "缓存", "显存", "量化", "调度",
    "注意力", "分页",
};
static const char *const link_words[] = {
    "see", "related note", "the paging side", "前一篇", "相关笔记", "另见", "more on this",
};
static const char *const task_words[] = {
    "measure again on the larger batch", "compare with the FP8 run", "重新核对块大小",
    "check the eviction order", "补上长上下文的结果", "write down the allocator settings",
};

/* ---- prose ---- */

static void S_sentence_en(sb *b, rng *r)
{
    const char *subj = PICK(r, en_subj);
    if (S_below(r, 3) == 0) {
        S_printf(b, "%s %s", PICK(r, en_open), subj);
    } else {
        /* every subject starts with an ASCII letter */
        char first = subj[0] >= 'a' && subj[0] <= 'z' ? (char)(subj[0] - 'a' + 'A') : subj[0];
        S_put(b, &first, 1);
        S_puts(b, subj + 1);
    }
    const char *verb = PICK(r, en_verb);
    const char *obj = PICK(r, en_obj);
    S_printf(b, " %s %s %s.", verb, obj, PICK(r, en_tail));
}

static void S_sentence_zh(sb *b, rng *r)
{
    if (S_below(r, 3) == 0)
        S_puts(b, PICK(r, zh_open));
    const char *subj = PICK(r, zh_subj);
    const char *adv = PICK(r, zh_adv);
    const char *verb = PICK(r, zh_verb);
    S_printf(b, "%s%s%s%s。", subj, adv, verb, PICK(r, zh_obj));
}

enum { PARA_EN, PARA_ZH, PARA_MIX };

static void S_paragraph(sb *b, rng *r, int kind)
{
    unsigned n = 4 + S_below(r, 3);
    for (unsigned i = 0; i < n; i++) {
        int zh = kind == PARA_ZH || (kind == PARA_MIX && i % 2 == 1);
        if (!zh && i > 0)
            S_puts(b, " ");
        if (zh)
            S_sentence_zh(b, r);
        else
            S_sentence_en(b, r);
    }
    S_puts(b, "\n\n");
}

/* ---- links between pages: always to files that exist ---- */

static void S_rel_page(sb *b, unsigned from, unsigned to, unsigned nsec)
{
    if (from % nsec == to % nsec)
        S_printf(b, "p%05u.md", to);
    else
        S_printf(b, "../s%02u/p%05u.md", to % nsec, to);
}

static void S_rel_section(sb *b, unsigned from, unsigned sec, unsigned nsec)
{
    if (from % nsec == sec)
        S_puts(b, "_index.md");
    else
        S_printf(b, "../s%02u/_index.md", sec);
}

static unsigned S_other_page(rng *r, unsigned self, unsigned pages)
{
    unsigned to = S_below(r, pages);
    return to == self && pages > 1 ? (to + 1) % pages : to;
}

/* ---- exact number formatting for quotes ---- */

static void S_commas(sb *b, uint64_t v)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            S_puts(b, ",");
        S_put(b, &digits[i], 1);
    }
}

static unsigned S_ctz(uint64_t v)
{
    unsigned n = 0;
    while (v && !(v & 1)) {
        v >>= 1;
        n++;
    }
    return n;
}

/* num / 2^k written out exactly: a dyadic fraction always ends in decimal. */
static void S_dyadic(sb *b, uint64_t num, unsigned k)
{
    uint64_t mask = (k ? ((uint64_t)1 << k) - 1 : 0);
    uint64_t frac = num & mask;
    S_commas(b, num >> k);
    if (!frac)
        return;
    unsigned tz = S_ctz(frac);
    S_puts(b, ".");
    for (unsigned i = 0; i < k - tz; i++) {
        frac *= 10;
        char d = (char)('0' + (frac >> k));
        S_put(b, &d, 1);
        frac &= mask;
    }
}

/* Bytes in the largest binary unit that reads as >= 1 with at most three
 * decimals; the quote is then the exact value, so no rounding is involved. */
static void S_binary(sb *b, uint64_t bytes)
{
    static const struct {
        const char *name;
        unsigned shift;
    } units[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
    unsigned tz = S_ctz(bytes);
    for (size_t i = 0; i < COUNT(units); i++) {
        if ((bytes >> units[i].shift) >= 1 && tz + 3 >= units[i].shift) {
            S_dyadic(b, bytes, units[i].shift);
            S_printf(b, " %s", units[i].name);
            return;
        }
    }
    S_commas(b, bytes);
    S_puts(b, " B");
}

static uint64_t S_pow10(unsigned e)
{
    uint64_t p = 1;
    while (e--)
        p *= 10;
    return p;
}

/* Decimal units, rounded half away from zero to two decimals; one more
 * decimal whenever the value sits within 0.1% of a step of a rounding
 * boundary, so floating-point conversion in the checker cannot flip it. */
static void S_decimal(sb *b, uint64_t bytes)
{
    const char *unit = bytes >= 1000000000u ? "GB" : bytes >= 1000000u ? "MB" : bytes >= 1000u ? "kB" : "B";
    unsigned p = bytes >= 1000000000u ? 9 : bytes >= 1000000u ? 6 : bytes >= 1000u ? 3 : 0;
    unsigned d = p < 2 ? p : 2;
    for (;;) {
        uint64_t step = S_pow10(p - d), r = bytes % step, half = step / 2;
        uint64_t dist = r > half ? r - half : half - r;
        if (d == p || dist * 1000 > step) {
            uint64_t q = bytes / step + (r >= half && step > 1 ? 1 : 0);
            uint64_t scale = S_pow10(d);
            S_commas(b, q / scale);
            if (d)
                S_printf(b, ".%0*" PRIu64, (int)d, q % scale);
            S_printf(b, " %s", unit);
            return;
        }
        d++;
    }
}

/* Whole decimal units with the value >= 100 units: off by at most 0.5%, well
 * inside the 5% default tolerance of an approximate quote. */
static void S_approx(sb *b, uint64_t bytes)
{
    const char *unit = "B";
    uint64_t step = 1;
    if (bytes >= 100000000000u) {
        unit = "GB";
        step = 1000000000u;
    } else if (bytes >= 100000000u) {
        unit = "MB";
        step = 1000000u;
    } else if (bytes >= 100000u) {
        unit = "kB";
        step = 1000u;
    }
    S_commas(b, (bytes + step / 2) / step);
    S_printf(b, " %s", unit);
}

/* ---- figures (--figures) ---- */

typedef struct {
    unsigned layers, kv_heads, group, head_dim, width;
    unsigned tokens, stretch, batch, budget_gib;
} shape;

static unsigned S_log2(unsigned v)
{
    unsigned n = 0;
    while (v > 1) {
        v >>= 1;
        n++;
    }
    return n;
}

/* One code span `QUOTE {MARK EXPR}` into out. */
static void S_span(sb *out, const sb *quote, const char *mark, const char *expr)
{
    S_printf(out, "`%s {%s %s}`", quote->p, mark, expr);
}

/* The ```{lua} block and the "checked figures" section: 20 quoted figures,
 * each quote computed here with integer arithmetic so it is exact. */
static unsigned S_figures(sb *lua, sb *sec, unsigned idx)
{
    static const unsigned layers[] = {24, 28, 32, 36, 40, 48, 60, 64, 80};
    static const unsigned kvh[] = {1, 2, 4, 8, 16};
    static const unsigned group[] = {1, 2, 4, 8};
    static const unsigned hdim[] = {64, 96, 128, 256};
    static const unsigned width[] = {1, 2, 2, 2, 4};
    static const unsigned tokens[] = {1024, 2048, 4096, 8192, 16384, 32768};
    static const unsigned stretch[] = {4, 8, 16, 32};
    static const unsigned batch[] = {2, 4, 8, 16, 32};
    static const unsigned budget[] = {8, 16, 24, 40, 80};
    rng r = {SEED_FIGS ^ ((uint64_t)idx * 0x100000001b3u)};
    shape s = {PICK(&r, layers), PICK(&r, kvh), PICK(&r, group), PICK(&r, hdim), PICK(&r, width),
               PICK(&r, tokens), PICK(&r, stretch), PICK(&r, batch), PICK(&r, budget)};
    unsigned q_heads = s.kv_heads * s.group, long_tokens = s.tokens * s.stretch;
    uint64_t per_token = 2ull * s.layers * s.kv_heads * s.head_dim * s.width;
    uint64_t total = per_token * s.tokens;
    uint64_t budget_bytes = (uint64_t)s.budget_gib << 30;
    unsigned lg = S_log2(s.group);

    S_printf(lua,
             "```{lua}\n"
             "-- the model shape this page talks about\n"
             "layers, kv_heads, q_heads, head_dim, width = %u, %u, %u, %u, %u\n"
             "tokens, long_tokens, batch, budget_gib = %u, %u, %u, %u\n"
             "per_token = 2 * layers * kv_heads * head_dim * width\n"
             "```\n\n",
             s.layers, s.kv_heads, q_heads, s.head_dim, s.width, s.tokens, long_tokens, s.batch,
             s.budget_gib);

    sb q = {0}, sp = {0}, ex = {0};
    unsigned n = 0;
#define FIG(mark)                                                                                  \
    do {                                                                                           \
        S_clear(&sp);                                                                              \
        S_span(&sp, &q, (mark), ex.p);                                                             \
        S_clear(&q);                                                                               \
        S_clear(&ex);                                                                              \
        n++;                                                                                       \
    } while (0)
#define EXPR(...) (S_clear(&ex), S_printf(&ex, __VA_ARGS__))

    S_puts(sec, "## 数字核对 Checked figures\n\n");

    EXPR("2*%u*%u*%u*%u*%u", s.layers, s.kv_heads, s.head_dim, s.tokens, s.width);
    S_binary(&q, total);
    FIG("=");
    S_printf(sec, "With %u layers and %u KV heads of dimension %u, one sequence of %u tokens holds %s.",
             s.layers, s.kv_heads, s.head_dim, s.tokens, sp.p);

    EXPR("2*layers*kv_heads*head_dim*tokens*width");
    S_commas(&q, total);
    S_puts(&q, " B");
    FIG("=");
    S_printf(sec, "按字节数算，同一条序列的缓存是 %s。", sp.p);

    EXPR("per_token");
    S_binary(&q, per_token);
    FIG("=");
    S_printf(sec, " Each new token adds %s to it.", sp.p);

    EXPR("per_token*long_tokens");
    S_binary(&q, per_token * long_tokens);
    FIG("=");
    S_printf(sec, "把上下文拉长到 %u 个词元，缓存就涨到 %s。", long_tokens, sp.p);

    EXPR("2*layers*kv_heads*head_dim*tokens");
    S_binary(&q, total / s.width);
    FIG("=");
    S_printf(sec, " Stored in FP8 instead, the same %u tokens need only %s.\n\n", s.tokens, sp.p);

    EXPR("per_token/width*4*tokens");
    S_binary(&q, total / s.width * 4);
    FIG("=");
    S_printf(sec, "如果用 FP32 存储，需要 %s。", sp.p);

    EXPR("2*layers*q_heads*head_dim*tokens*width");
    S_binary(&q, total * s.group);
    FIG("=");
    S_printf(sec, " Without grouping, that is with plain multi-head attention, the cache would be %s.",
             sp.p);

    EXPR("q_heads/kv_heads");
    S_printf(&q, "%u×", s.group);
    FIG("=");
    S_printf(sec, "查询头数是 KV 头数的 %s。", sp.p);

    EXPR("kv_heads/q_heads");
    S_dyadic(&q, 100, lg);
    S_puts(&q, "%");
    FIG("=");
    S_printf(sec, " The KV heads are %s of the query heads.", sp.p);

    EXPR("long_tokens/tokens");
    S_printf(&q, "%u倍", s.stretch);
    FIG("=");
    S_printf(sec, "长上下文是短上下文的 %s。\n\n", sp.p);

    EXPR("batch*per_token*tokens");
    S_binary(&q, total * s.batch);
    FIG("=");
    S_printf(sec, "A batch of %u such sequences takes %s.", s.batch, sp.p);

    EXPR("budget_gib*1024*1024*1024");
    S_printf(&q, "%u GiB", s.budget_gib);
    FIG("=");
    S_printf(sec, "假设显存预算是 %s，", sp.p);

    EXPR("budget_gib*1024*1024*1024//per_token");
    S_commas(&q, budget_bytes / per_token);
    FIG("=");
    S_printf(sec, "能放下 %s 个词元。", sp.p);

    EXPR("per_token");
    S_commas(&q, per_token * 8);
    S_puts(&q, " bits");
    FIG("=");
    S_printf(sec, " Counted in bits, one token costs %s.", sp.p);

    EXPR("per_token*tokens");
    S_decimal(&q, total);
    FIG("=");
    S_printf(sec, "用十进制单位写，同一条序列是 %s。\n\n", sp.p);

    EXPR("per_token*long_tokens");
    S_approx(&q, per_token * long_tokens);
    FIG(idx % 2 ? "~" : "≈");
    S_printf(sec, "At %u tokens that is roughly %s in decimal units.", long_tokens, sp.p);

    EXPR("2*%u*%u*%u*%u*%u, per_token*tokens", s.layers, s.kv_heads, s.head_dim, s.tokens, s.width);
    S_binary(&q, total);
    FIG("=");
    S_printf(sec, "公式和变量两种写法给出同一个结果：%s。", sp.p);

    EXPR("per_token*tokens/2");
    S_binary(&q, total / 2);
    FIG("=");
    S_printf(sec, " Sharing one cache between every two layers, as CLA2 does, halves it to %s.", sp.p);

    EXPR("per_token*(tokens//4)");
    S_binary(&q, per_token * (s.tokens / 4));
    FIG("=");
    S_printf(sec, "只保留最后四分之一的词元作为滑动窗口时，缓存是 %s。", sp.p);

    EXPR("1 - kv_heads/q_heads");
    S_dyadic(&q, 100 * (uint64_t)(s.group - 1), lg);
    S_puts(&q, "%");
    FIG("=");
    S_printf(sec, " Compared with multi-head attention, grouping saves %s of the cache.\n\n", sp.p);
#undef FIG
#undef EXPR
    free(q.p);
    free(sp.p);
    free(ex.p);
    return n;
}

/* ---- pages ---- */

static const char *const code_lang[] = {"python", "c", "yaml", "sh"};

static void S_code(sb *b, rng *r)
{
    static const unsigned lay[] = {24, 28, 32, 40, 48, 80};
    static const unsigned kv[] = {1, 2, 4, 8};
    static const unsigned ctx[] = {2048, 4096, 8192, 32768};
    unsigned which = S_below(r, (unsigned)COUNT(code_lang));
    unsigned l = PICK(r, lay), h = PICK(r, kv), t = PICK(r, ctx);
    S_printf(b, "```%s\n", code_lang[which]);
    switch (which) {
    case 0:
        S_printf(b,
                 "def kv_bytes(layers, kv_heads, head_dim, tokens, width):\n"
                 "    # one K and one V per layer\n"
                 "    return 2 * layers * kv_heads * head_dim * tokens * width\n"
                 "\n"
                 "print(kv_bytes(%u, %u, 128, %u, 2))\n",
                 l, h, t);
        break;
    case 1:
        S_printf(b,
                 "static unsigned long long kv_bytes(int layers, int kv_heads, int head_dim,\n"
                 "                                   long tokens, int width)\n"
                 "{\n"
                 "    if (tokens < 0 || width <= 0)\n"
                 "        return 0; /* nothing to store */\n"
                 "    return 2ULL * layers * kv_heads * head_dim * tokens * width;\n"
                 "}\n"
                 "/* layers=%u kv_heads=%u tokens=%u */\n",
                 l, h, t);
        break;
    case 2:
        S_printf(b,
                 "model:\n"
                 "  layers: %u\n"
                 "  kv_heads: %u\n"
                 "  head_dim: 128\n"
                 "cache:\n"
                 "  block_size: 16\n"
                 "  dtype: fp16\n"
                 "  max_tokens: %u\n",
                 l, h, t);
        break;
    default:
        S_printf(b,
                 "serve --max-model-len %u --kv-cache-dtype fp8 --block-size 16 \\\n"
                 "      --num-layers %u --num-kv-heads %u && echo ready\n",
                 t, l, h);
        break;
    }
    S_puts(b, "```\n\n");
}

static void S_table(sb *b, rng *r)
{
    static const unsigned lay[] = {24, 28, 32, 40, 48, 60, 80};
    static const unsigned kv[] = {1, 2, 4, 8, 16};
    static const unsigned hd[] = {64, 128, 256};
    unsigned rows = 4 + S_below(r, 3);
    S_puts(b, "| 模型 model | 层数 layers | KV 头 heads | 头宽 head dim | 每词元字节 bytes per token |\n"
              "|---|---:|---:|---:|---:|\n");
    for (unsigned i = 0; i < rows; i++) {
        unsigned l = PICK(r, lay), h = PICK(r, kv), d = PICK(r, hd);
        S_printf(b, "| model-%c | %u | %u | %u | %u |\n", 'a' + (int)i, l, h, d, 2 * l * h * d * 2);
    }
    S_puts(b, "\n");
}

/* Three distinct headings for a page: a partial Fisher-Yates shuffle. */
static void S_pick_headings(rng *r, const char *out[3])
{
    unsigned order[COUNT(headings)];
    for (unsigned i = 0; i < COUNT(headings); i++)
        order[i] = i;
    for (unsigned i = 0; i < 3; i++) {
        unsigned j = i + S_below(r, (unsigned)COUNT(headings) - i);
        unsigned t = order[i];
        order[i] = order[j];
        order[j] = t;
        out[i] = headings[order[i]];
    }
}

static void S_front_matter(sb *b, rng *r, unsigned idx)
{
    const char *h = PICK(r, headings);
    unsigned char c = (unsigned char)h[0];
    /* Chinese titles get Chinese framing, English ones English */
    if (c >= 0x80)
        S_printf(b, "---\ntitle: \"笔记 %05u：%s\"\n", idx, h);
    else
        S_printf(b, "---\ntitle: \"Note %05u: %s\"\n", idx, h);
    S_printf(b, "date: %u-%02u-%02u\n", 2019 + S_below(r, 5), 1 + S_below(r, 12), 1 + S_below(r, 28));
    unsigned ntags = 2 + S_below(r, 3), used[4];
    S_puts(b, "tags: [");
    for (unsigned i = 0; i < ntags; i++) {
        unsigned t;
        int dup;
        do {
            t = S_below(r, (unsigned)COUNT(tags));
            dup = 0;
            for (unsigned j = 0; j < i; j++)
                dup |= used[j] == t;
        } while (dup);
        used[i] = t;
        S_printf(b, "%s\"%s\"", i ? ", " : "", tags[t]);
    }
    S_puts(b, "]\nsummary: \"");
    if (S_below(r, 2))
        S_sentence_zh(b, r);
    else
        S_sentence_en(b, r);
    S_printf(b, "\"\nweight: %u\n---\n\n", 1 + S_below(r, 1000));
}

typedef struct {
    unsigned pages, nsec;
    int figures;
} corpus;

/* A whole page file into out; returns the number of figures written. */
static unsigned S_page(sb *out, const corpus *c, unsigned idx)
{
    rng r = {SEED_TEXT ^ ((uint64_t)idx * 0x100000001b3u)};
    sb head = {0}, body = {0}, tail = {0}, lua = {0}, figs = {0};
    const char *h[3];
    unsigned nfig = 0;

    S_front_matter(&head, &r, idx);
    S_pick_headings(&r, h);

    /* intro: English, with a little inline markup */
    S_paragraph(&head, &r, PARA_EN);
    if (head.len >= 2)
        head.len -= 2; /* continue the intro paragraph */
    S_printf(&head, " The helper `kv_bytes()` is **not** the whole story: ~~paging is free~~ it has a cost.\n\n");

    S_paragraph(&body, &r, PARA_ZH);
    S_printf(&body, "## %s\n\n", h[0]);
    S_paragraph(&body, &r, PARA_MIX);
    S_table(&body, &r);
    S_paragraph(&body, &r, PARA_EN);
    S_printf(&body, "## %s\n\n", h[1]);
    S_code(&body, &r);
    S_paragraph(&body, &r, PARA_ZH);

    S_printf(&tail, "### %s\n\n", h[2]);
    unsigned a = S_other_page(&r, idx, c->pages), bb = S_other_page(&r, idx, c->pages);
    S_printf(&tail, "- [%s %05u](", PICK(&r, link_words), a);
    S_rel_page(&tail, idx, a, c->nsec);
    S_printf(&tail, ")\n- [%s %05u](", PICK(&r, link_words), bb);
    S_rel_page(&tail, idx, bb, c->nsec);
    unsigned sec = S_below(&r, c->nsec);
    S_printf(&tail, ")\n- [section s%02u 第 %u 部分](", sec, sec);
    S_rel_section(&tail, idx, sec, c->nsec);
    S_printf(&tail, ")\n\n* [x] %s\n* [ ] %s\n\n", PICK(&r, task_words), PICK(&r, task_words));

    /* filler until the page is about 4 KB; one inline link among it */
    unsigned target = PAGE_TARGET + S_below(&r, PAGE_SPREAD);
    unsigned inline_to = S_other_page(&r, idx, c->pages);
    int linked = 0;
    while (head.len + body.len + tail.len < target) {
        if (!linked) {
            S_printf(&body, "For the allocator side, [%s](", PICK(&r, link_words));
            S_rel_page(&body, idx, inline_to, c->nsec);
            S_puts(&body, ") walks through the same numbers. ");
            linked = 1;
        }
        S_paragraph(&body, &r, (int)S_below(&r, 3));
    }
    if (!linked) {
        S_puts(&body, "For the allocator side, [see](");
        S_rel_page(&body, idx, inline_to, c->nsec);
        S_puts(&body, ").\n\n");
    }

    if (c->figures)
        nfig = S_figures(&lua, &figs, idx);

    S_clear(out);
    S_put(out, head.p, head.len);
    if (lua.len)
        S_put(out, lua.p, lua.len);
    S_put(out, body.p, body.len);
    S_put(out, tail.p, tail.len);
    if (figs.len)
        S_put(out, figs.p, figs.len);
    /* end with exactly one newline */
    while (out->len > 1 && out->p[out->len - 1] == '\n' && out->p[out->len - 2] == '\n')
        out->p[--out->len] = '\0';
    free(head.p);
    free(body.p);
    free(tail.p);
    free(lua.p);
    free(figs.p);
    return nfig;
}

static void S_section_index(sb *out, unsigned sec)
{
    rng r = {SEED_TEXT ^ (0xabcdefu + sec)};
    S_clear(out);
    S_printf(out, "---\ntitle: \"Section %02u 第 %u 部分\"\nweight: %u\n---\n\n", sec, sec, sec + 1);
    S_paragraph(out, &r, PARA_EN);
    S_paragraph(out, &r, PARA_ZH);
    out->p[--out->len] = '\0';
}

/* ---- the two projects around the pages ---- */

static const char kv_site_yaml[] = "title: bench\nbase_url: \"/\"\n";

static const char kv_page_html[] =
    "<!doctype html>\n"
    "<html><head><meta charset=\"utf-8\"><title>{{ page.title }}</title></head>\n"
    "<body><main>{{{ page.content }}}</main></body></html>\n";

static const char kv_list_html[] =
    "<!doctype html>\n"
    "<html><head><meta charset=\"utf-8\"><title>{{ page.title }}</title></head>\n"
    "<body><main>{{{ page.content }}}\n"
    "<ul>{% for _, p in ipairs(page.pages) do %}<li><a href=\"{{ p.url }}\">{{ p.title }}</a></li>{% end %}</ul>\n"
    "</main></body></html>\n";

/* The generated pages kvsite renders besides content: one tag, all tags (Hugo's
 * term and taxonomy pages), the checks report (DESIGN.md: every figure with
 * page, line, quote, expression, value, tier, status; Hugo has none) and 404. */
static const char kv_tags_html[] =
    "<!doctype html>\n"
    "<html><head><meta charset=\"utf-8\"><title>{{ page.title }}</title></head>\n"
    "<body><main>\n"
    "<ul>{% for _, t in ipairs(site.tags) do %}<li><a href=\"{{ t.url }}\">{{ t.name }}</a></li>{% end %}</ul>\n"
    "</main></body></html>\n";

/* The report is split by section (checks-section.html), as a site with
 * 100,000s of figures would have it: the index lists the sections with their
 * totals and the root pages' figures, each section page its own figures. */
#define KV_FIGURE_ROWS                                                                        \
    "{% for _, f in ipairs(report.figures.list) do %}<tr id=\"{{ f.anchor }}\"><td><a href=\"{{ f.page_url }}\">" \
    "{{ f.src }}</a></td><td>{{ f.line }}</td><td>{{ f.quote }}</td><td>{{ f.expr }}</td>"    \
    "<td>{{ f.value }}</td><td>{{ f.tier }}</td><td>{{ f.status }}</td></tr>\n{% end %}"

/* A report page with many figures comes in parts (kvsite's README): each
 * links its neighbours. */
#define KV_PART_NAV                                                                           \
    "{% local pt = report.part %}{% if pt and pt.total_pages > 1 then %}<nav>"                \
    "{% if pt.prev then %}<a href=\"{{ pt.prev }}\" rel=\"prev\">prev</a> {% end %}"          \
    "part {{ pt.number }}/{{ pt.total_pages }}"                                                \
    "{% if pt.next then %} <a href=\"{{ pt.next }}\" rel=\"next\">next</a>{% end %}</nav>{% end %}\n"

static const char kv_checks_html[] =
    "<!doctype html>\n"
    "<html><head><meta charset=\"utf-8\"><title>{{ page.title }}</title></head>\n"
    "<body><main><p>{{ site.figures.total }} figures, {{ site.figures.failed }} failed</p>\n"
    "<ul>{% for _, s in ipairs(report.sections) do %}<li><a href=\"{{ s.url }}\">{{ s.title }}</a> "
    "{{ s.total }}</li>{% end %}</ul>\n"
    "<table>\n" KV_FIGURE_ROWS "</table>" KV_PART_NAV "</main></body></html>\n";

static const char kv_checks_section_html[] =
    "<!doctype html>\n"
    "<html><head><meta charset=\"utf-8\"><title>{{ page.title }}</title></head>\n"
    "<body><main><h1>{{ report.section.title }}</h1><table>\n" KV_FIGURE_ROWS
    "</table>" KV_PART_NAV "</main></body></html>\n";

static const char kv_404_html[] =
    "<!doctype html>\n"
    "<html><head><meta charset=\"utf-8\"><title>Not found</title></head>\n"
    "<body><main><h1>Not found</h1></main></body></html>\n";

/* Hugo 0.111: the same minimal pages; one feed, pretty URLs, tag pages, no
 * typographer (kvsite has none), raw HTML off, and fenced code highlighted
 * with CSS classes, as kvsite highlights it (tree-sitter, hl-* spans). */
static const char hugo_toml[] =
    "baseURL = \"/\"\n"
    "title = \"bench\"\n"
    "languageCode = \"en\"\n"
    "enableRobotsTXT = false\n"
    "\n"
    "[taxonomies]\n"
    "  tag = \"tags\"\n"
    "\n"
    "[outputs]\n"
    "  home = [\"HTML\", \"RSS\"]\n"
    "  section = [\"HTML\"]\n"
    "  taxonomy = [\"HTML\"]\n"
    "  term = [\"HTML\"]\n"
    "  page = [\"HTML\"]\n"
    "\n"
    "[markup.goldmark.renderer]\n"
    "  unsafe = false\n"
    "\n"
    "[markup.goldmark.extensions]\n"
    "  definitionList = false\n"
    "  footnote = false\n"
    "  linkify = true\n"
    "  strikethrough = true\n"
    "  table = true\n"
    "  taskList = true\n"
    "  typographer = false\n"
    "\n"
    "[markup.highlight]\n"
    "  codeFences = true\n"
    "  noClasses = false\n"
    "  guessSyntax = false\n";

static const char hugo_single[] =
    "<!doctype html>\n"
    "<html><head><meta charset=\"utf-8\"><title>{{ .Title }}</title></head>\n"
    "<body><main>{{ .Content }}</main></body></html>\n";

static const char hugo_list[] =
    "<!doctype html>\n"
    "<html><head><meta charset=\"utf-8\"><title>{{ .Title }}</title></head>\n"
    "<body><main>{{ .Content }}\n"
    "<ul>{{ range .Pages }}<li><a href=\"{{ .RelPermalink }}\">{{ .Title }}</a></li>{{ end }}</ul>\n"
    "</main></body></html>\n";

static const char hugo_404[] =
    "<!doctype html>\n"
    "<html><head><meta charset=\"utf-8\"><title>Not found</title></head>\n"
    "<body><main><h1>Not found</h1></main></body></html>\n";

/* Hugo leaves `x.md` link targets alone; kvsite rewrites and checks them. This
 * hook does the same in Hugo, and fails the build on a link that does not
 * resolve, so a Hugo build doubles as a link check of the corpus. */
static const char hugo_link_hook[] =
    "{{- $dest := .Destination -}}\n"
    "{{- $u := urls.Parse .Destination -}}\n"
    "{{- if and (not $u.Scheme) (strings.HasSuffix $u.Path \".md\") -}}\n"
    "  {{- $target := path.Join \"/\" .Page.File.Dir $u.Path -}}\n"
    "  {{- with site.GetPage $target -}}\n"
    "    {{- $dest = .RelPermalink -}}\n"
    "  {{- else -}}\n"
    "    {{- errorf \"%s: link %q does not resolve\" $.Page.File.Path $.Destination -}}\n"
    "  {{- end -}}\n"
    "{{- end -}}\n"
    "<a href=\"{{ $dest | safeURL }}\"{{ with .Title }} title=\"{{ . }}\"{{ end }}>{{ .Text | safeHTML }}</a>\n"
    "{{- /* no trailing newline: the hook output is inline */ -}}\n";

/* ---- files ---- */

static int S_mkdir(const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return 0;
    fprintf(stderr, "gencorpus: %s: %s\n", path, strerror(errno));
    return -1;
}

static int S_write(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "gencorpus: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t w = fwrite(data, 1, len, f);
    int bad = w != len;
    bad |= fclose(f) != 0;
    if (bad) {
        fprintf(stderr, "gencorpus: %s: write failed\n", path);
        return -1;
    }
    return 0;
}

/* Writes the same bytes under OUTDIR/kvsite/REL and OUTDIR/hugo/REL. */
static int S_write_both(const char *outdir, const char *rel, const sb *data)
{
    char path[MAX_OUTDIR + 64];
    snprintf(path, sizeof path, "%s/kvsite/%s", outdir, rel);
    if (S_write(path, data->p, data->len) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/hugo/%s", outdir, rel);
    return S_write(path, data->p, data->len);
}

static int S_write_in(const char *outdir, const char *rel, const char *text)
{
    char path[MAX_OUTDIR + 64];
    snprintf(path, sizeof path, "%s/%s", outdir, rel);
    return S_write(path, text, strlen(text));
}

/* OUTDIR must be missing or empty: a stale tree would break determinism. */
static int S_check_outdir(const char *outdir)
{
    DIR *d = opendir(outdir);
    if (!d)
        return errno == ENOENT ? 0 : (fprintf(stderr, "gencorpus: %s: %s\n", outdir, strerror(errno)), -1);
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            empty = 0;
    closedir(d);
    if (!empty)
        fprintf(stderr, "gencorpus: %s: not empty (remove it first)\n", outdir);
    return empty ? 0 : -1;
}

static int S_skeleton(const char *outdir, unsigned nsec)
{
    static const char *const dirs[] = {
        "", "/kvsite", "/kvsite/templates", "/kvsite/content", "/hugo", "/hugo/content",
        "/hugo/layouts", "/hugo/layouts/_default", "/hugo/layouts/_default/_markup",
    };
    char path[MAX_OUTDIR + 64];
    for (size_t i = 0; i < COUNT(dirs); i++) {
        snprintf(path, sizeof path, "%s%s", outdir, dirs[i]);
        if (S_mkdir(path) != 0)
            return -1;
    }
    for (unsigned s = 0; s < nsec; s++) {
        snprintf(path, sizeof path, "%s/kvsite/content/s%02u", outdir, s);
        if (S_mkdir(path) != 0)
            return -1;
        snprintf(path, sizeof path, "%s/hugo/content/s%02u", outdir, s);
        if (S_mkdir(path) != 0)
            return -1;
    }
    int rc = 0;
    rc |= S_write_in(outdir, "kvsite/site.yaml", kv_site_yaml);
    rc |= S_write_in(outdir, "kvsite/templates/page.html", kv_page_html);
    rc |= S_write_in(outdir, "kvsite/templates/section.html", kv_list_html);
    rc |= S_write_in(outdir, "kvsite/templates/home.html", kv_list_html);
    rc |= S_write_in(outdir, "kvsite/templates/tag.html", kv_list_html);
    rc |= S_write_in(outdir, "kvsite/templates/tags.html", kv_tags_html);
    rc |= S_write_in(outdir, "kvsite/templates/checks.html", kv_checks_html);
    rc |= S_write_in(outdir, "kvsite/templates/checks-section.html", kv_checks_section_html);
    rc |= S_write_in(outdir, "kvsite/templates/404.html", kv_404_html);
    rc |= S_write_in(outdir, "hugo/hugo.toml", hugo_toml);
    rc |= S_write_in(outdir, "hugo/layouts/_default/single.html", hugo_single);
    rc |= S_write_in(outdir, "hugo/layouts/_default/list.html", hugo_list);
    rc |= S_write_in(outdir, "hugo/layouts/index.html", hugo_list);
    rc |= S_write_in(outdir, "hugo/layouts/404.html", hugo_404);
    rc |= S_write_in(outdir, "hugo/layouts/_default/_markup/render-link.html", hugo_link_hook);
    return rc ? -1 : 0;
}

static int S_usage(void)
{
    fputs("usage: gencorpus OUTDIR PAGES [--figures] [--sections N]\n"
          "  writes OUTDIR/kvsite and OUTDIR/hugo over the same PAGES pages (1..100000)\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 6)
        return S_usage();
    corpus c = {0, 0, 0};
    unsigned long want_sec = MAX_SECTIONS;
    for (int a = 3; a < argc; a++) {
        if (strcmp(argv[a], "--figures") == 0) {
            c.figures = 1;
        } else if (strcmp(argv[a], "--sections") == 0 && a + 1 < argc) {
            char *e;
            errno = 0;
            want_sec = strtoul(argv[++a], &e, 10);
            if (errno || *e || argv[a][0] == '-' || want_sec < 1 || want_sec > MAX_SECTIONS) {
                fprintf(stderr, "gencorpus: --sections must be a number in 1..%u\n",
                        MAX_SECTIONS);
                return 2;
            }
        } else {
            return S_usage();
        }
    }
    const char *outdir = argv[1];
    if (!*outdir || strlen(outdir) > MAX_OUTDIR) {
        fprintf(stderr, "gencorpus: OUTDIR must be 1..%u bytes\n", MAX_OUTDIR);
        return 2;
    }
    char *end;
    errno = 0;
    unsigned long n = strtoul(argv[2], &end, 10);
    if (errno || *end || end == argv[2] || argv[2][0] == '-' || n < 1 || n > MAX_PAGES) {
        fprintf(stderr, "gencorpus: PAGES must be a number in 1..%u\n", MAX_PAGES);
        return 2;
    }
    c.pages = (unsigned)n;
    c.nsec = c.pages < want_sec ? c.pages : (unsigned)want_sec;

    if (S_check_outdir(outdir) != 0 || S_skeleton(outdir, c.nsec) != 0)
        return 1;

    sb page = {0};
    char rel[64];
    rng home_r = {SEED_TEXT ^ 0x686f6d65u};
    S_puts(&page, "---\ntitle: \"bench\"\n---\n\n");
    S_paragraph(&page, &home_r, PARA_MIX);
    page.p[--page.len] = '\0';
    if (S_write_both(outdir, "content/_index.md", &page) != 0)
        return 1;
    for (unsigned s = 0; s < c.nsec; s++) {
        S_section_index(&page, s);
        snprintf(rel, sizeof rel, "content/s%02u/_index.md", s);
        if (S_write_both(outdir, rel, &page) != 0)
            return 1;
    }

    uint64_t total = 0, figs = 0;
    size_t min = SIZE_MAX, max = 0;
    for (unsigned i = 0; i < c.pages; i++) {
        figs += S_page(&page, &c, i);
        snprintf(rel, sizeof rel, "content/s%02u/p%05u.md", i % c.nsec, i);
        if (S_write_both(outdir, rel, &page) != 0)
            return 1;
        total += page.len;
        min = page.len < min ? page.len : min;
        max = page.len > max ? page.len : max;
    }
    free(page.p);
    printf("gencorpus: %s: %u pages in %u sections, %" PRIu64 " bytes of pages "
           "(min %zu, mean %" PRIu64 ", max %zu), %" PRIu64 " figures\n",
           outdir, c.pages, c.nsec, total, min, total / c.pages, max, figs);
    return 0;
}
