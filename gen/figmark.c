#include "figmark.h"

#include <string.h>

/* One row per tier, indexed by fig_tier: adding a tier is adding its row here
 * (and its colour and glyph to the theme's CSS). */
static const struct {
    const char *key;
    const char *label[2]; /* English, Chinese: what the popover says of the tier */
} S_tiers[] = {
    [FIG_COMPUTED] = {"computed", {"Computed: recomputed from its expression at build time",
                                   "计算：构建时由表达式重新算出"}},
    [FIG_MEASURED] = {"measured", {"Measured: read from a stored measurement",
                                   "实测：读取了存档的测量记录"}},
    [FIG_CITED] = {"cited", {"Cited: reported by a source, not reproduced",
                             "引用：来源报告的数字，未复现"}},
    [FIG_REFUTED] = {"refuted", {"Refuted: a claim shown wrong by its expression",
                                 "驳斥：表达式证明这个说法不对"}},
};
#define S_NTIERS (sizeof S_tiers / sizeof *S_tiers)

/* The popover's words, English and Chinese. */
enum { W_EXPR, W_VALUE, W_PROV, W_SOURCE, W_REPORT, W_FAIL, W_TRUE, W_CLAIM, W_NWORDS };
static const char *const S_words[2][W_NWORDS] = {
    {"Expression", "Value", "Measured at", "Source", "Its row in the checks report", "Fails",
     "True value", "Claimed in"},
    {"表达式", "值", "测量出处", "来源", "核查报告里的这一行", "未通过", "真实值", "说法出处"},
};

int figmark_lang(const char *language)
{
    return language && (language[0] == 'z' || language[0] == 'Z') &&
           (language[1] == 'h' || language[1] == 'H');
}

const char *figmark_tier_key(fig_tier t)
{
    return (size_t)t < S_NTIERS && S_tiers[t].key ? S_tiers[t].key : S_tiers[0].key;
}

static void S_html(buf *b, const char *s) { buf_put_html(b, s, strlen(s)); }

void figmark_open(buf *enter, const figmark *m)
{
    const figure *f = m->f;
    BUF_PUT_LIT(enter, "<span class=\"fig\" id=\"");
    S_html(enter, f->anchor);
    BUF_PUT_LIT(enter, "\" data-tier=\"");
    buf_puts(enter, figmark_tier_key(f->tier));
    if (!f->ok)
        BUF_PUT_LIT(enter, "\" data-status=\"fail");
    BUF_PUT_LIT(enter, "\">");
    if (!m->in_link) {
        BUF_PUT_LIT(enter, "<button type=\"button\" class=\"fig-q\" popovertarget=\"");
        S_html(enter, f->anchor);
        BUF_PUT_LIT(enter, "-d\" aria-describedby=\"");
        S_html(enter, f->anchor);
        BUF_PUT_LIT(enter, "-d\">");
    }
    if (f->tier == FIG_REFUTED)
        BUF_PUT_LIT(enter, "<s>"); /* the claim, struck through */
}

/* After a refuted claim's quote: " → 43 GB", the true value beside it. */
static void S_true(buf *exit, const figmark *m)
{
    if (!m->true_value)
        return;
    BUF_PUT_LIT(exit, "<span class=\"fig-true\"> \xE2\x86\x92 ");
    S_html(exit, m->true_value);
    BUF_PUT_LIT(exit, "</span>");
}

/* <span class="fig-row"><span class="fig-k">KEY</span> */
static void S_row(buf *b, const char *key)
{
    BUF_PUT_LIT(b, "<span class=\"fig-row\"><span class=\"fig-k\">");
    buf_puts(b, key);
    BUF_PUT_LIT(b, "</span> ");
}

void figmark_close(buf *exit, const figmark *m)
{
    const figure *f = m->f;
    const char *const *w = S_words[m->lang ? 1 : 0];
    if (f->tier == FIG_REFUTED)
        BUF_PUT_LIT(exit, "</s>");
    if (m->in_link) {
        S_true(exit, m);
        BUF_PUT_LIT(exit, "</span>");
        return;
    }
    BUF_PUT_LIT(exit, "</button>");
    S_true(exit, m);
    BUF_PUT_LIT(exit, "<span class=\"fig-pop\" popover id=\"");
    S_html(exit, f->anchor);
    BUF_PUT_LIT(exit, "-d\"><span class=\"fig-tier\">");
    buf_puts(exit, S_tiers[(size_t)f->tier < S_NTIERS ? f->tier : 0].label[m->lang ? 1 : 0]);
    BUF_PUT_LIT(exit, "</span><span class=\"fig-row fig-quote\">");
    S_html(exit, f->quote);
    BUF_PUT_LIT(exit, "</span>");
    if (m->message) {
        S_row(exit, w[W_FAIL]);
        S_html(exit, m->message);
        BUF_PUT_LIT(exit, "</span>");
    }
    if (f->tier != FIG_CITED && f->expr[0]) {
        S_row(exit, w[W_EXPR]);
        BUF_PUT_LIT(exit, "<code>");
        S_html(exit, f->expr);
        BUF_PUT_LIT(exit, "</code></span>");
    }
    if (m->value) {
        S_row(exit, w[W_VALUE]);
        S_html(exit, m->value);
        BUF_PUT_LIT(exit, "</span>");
    }
    if (m->true_value) {
        S_row(exit, w[W_TRUE]);
        S_html(exit, m->true_value);
        BUF_PUT_LIT(exit, "</span>");
    }
    if (f->provenance && f->provenance[0]) {
        S_row(exit, w[f->tier == FIG_REFUTED ? W_CLAIM : W_PROV]);
        S_html(exit, f->provenance);
        BUF_PUT_LIT(exit, "</span>");
    }
    if (m->source) {
        S_row(exit, w[W_SOURCE]);
        if (m->source_url) {
            BUF_PUT_LIT(exit, "<a href=\"");
            buf_puts(exit, m->source_url);
            BUF_PUT_LIT(exit, "\">");
        }
        S_html(exit, m->source);
        if (m->source_url)
            BUF_PUT_LIT(exit, "</a>");
        BUF_PUT_LIT(exit, "</span>");
    }
    if (m->report_url) {
        BUF_PUT_LIT(exit, "<a class=\"fig-report\" href=\"");
        buf_put(exit, m->report_url, m->report_url_len);
        S_html(exit, m->row);
        BUF_PUT_LIT(exit, "\">");
        buf_puts(exit, w[W_REPORT]);
        BUF_PUT_LIT(exit, " →</a>");
    }
    BUF_PUT_LIT(exit, "</span></span>");
}
