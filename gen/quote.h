/* quote: the quote grammar, units, the rounding rule and the comparison of a
 * quoted figure with the value its expression computed.
 *
 * A quoted figure in Markdown is `224 MiB {= EXPR}`; the quote is "224 MiB".
 * Grammar (after trimming ASCII whitespace, at most QUOTE_MAX_LEN bytes):
 *
 *   quote  = [mark [spaces]] [sign] number [spaces] [unit]
 *   mark   = "~" | "≈" (U+2248) | "约" (U+7EA6)
 *   sign   = "+" | "-" | "−" (U+2212)
 *   number = group *(sep group3) ["." 1*digit]   group: 1-3 digits when sep is
 *            used, any count otherwise; no leading zeros; at most
 *            QUOTE_MAX_DIGITS significant digits and as many decimals
 *   sep    = "," | U+2009 thin space | U+202F narrow no-break space (one kind
 *            per number)
 *   spaces = 1*(" " | U+00A0 | U+2009 | U+202F)
 *   unit   = a built-in or user-defined unit name, case-sensitive
 *
 * Values are plain numbers in base units: bytes, fractions (0.531, quoted as
 * 53.1%), ratios and counts. A unit converts: value in unit = value / scale.
 *
 * Rounding rule (exact quotes): the value in the quote's unit, rounded half away
 * from zero to the quote's decimals, must equal the quoted number. Binary
 * floating point cannot hold most decimal halves (1.005 is stored as
 * 1.00499999999999989...), so a value within a relative QUOTE_TIE_REL of a
 * half (at most 1/1024 of the last quoted digit) counts as the half itself:
 * 1.005 quotes as 1.01, 0.125 as 0.13 (never 0.12), 0.0625 GiB as 0.06 GiB.
 * quote_format_number() rounds the same way, so a message never shows a
 * rounded value that disagrees with the verdict.
 *
 * Everything here is pure: no globals, no I/O, no locale. Messages are appended
 * to the caller's buf (a NULL buf is allowed and receives nothing); each is one
 * line without a trailing newline. */
#ifndef KV_QUOTE_H
#define KV_QUOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define QUOTE_MAX_LEN 64        /* bytes of a quote after trimming */
#define QUOTE_UNIT_NAME_MAX 23  /* bytes of a unit name */
#define QUOTE_USER_UNITS_MAX 64 /* units a page may define */
#define QUOTE_MAX_DIGITS 15     /* significant digits and decimals of a quote */
#define QUOTE_TIE_REL 1e-12     /* see the rounding rule above */

typedef enum {
    QUOTE_BYTES,    /* base unit B */
    QUOTE_FRACTION, /* base unit: a plain fraction, 1 = 100% */
    QUOTE_RATIO,    /* 7×: base unit 1 */
    QUOTE_COUNT     /* tokens, requests, ...; plain numbers are counts */
} quote_kind;

typedef struct {
    char name[QUOTE_UNIT_NAME_MAX + 1]; /* "" for a plain number */
    quote_kind kind;
    double scale;          /* base units per unit: GiB 2^30, % 0.01, bit 0.125 */
    const char *companion; /* static string: "GiB" for GB and back; NULL if none */
    bool builtin;
} quote_unit;

/* A parsed quote: a plain value, no pointers into the input or a unit set. */
typedef struct {
    char text[QUOTE_MAX_LEN + 1]; /* as written, trimmed, NUL-terminated */
    size_t body;                  /* offset in text after the mark and its spaces */
    bool approx;                  /* written with ~, ≈ or 约 */
    bool spaced;                  /* a space between number and unit */
    double number;                /* signed, in the quote's unit: 53.1 */
    double mantissa;              /* the digits as an integer: 531 (exact) */
    int decimals;                 /* digits written after the point: 1 */
    quote_unit unit;              /* copied from the unit set */
} quote;

/* The units a page can quote in: every built-in plus up to
 * QUOTE_USER_UNITS_MAX defined from Lua. Owned by the caller of _new. */
typedef struct quote_unitset quote_unitset;

quote_unitset *quote_units_new(void);
void quote_units_free(quote_unitset *u); /* NULL is allowed */
/* Forgets the units defined from Lua, as a fresh set (the next page's). */
void quote_units_clear(quote_unitset *u);

/* Defines a unit; kind is "bytes", "fraction", "ratio" or "count". Refuses a
 * bad name (empty, too long, spaces, control characters, starting with a
 * digit, sign or point, looking like an exponent, ASCII other than letters,
 * digits and / _ ^ -), redefining a built-in, redefining a user unit
 * differently (an identical redefinition is a no-op), a scale that is not
 * positive and finite, and more than QUOTE_USER_UNITS_MAX units.
 * Returns 0, or -1 with a one-line reason appended to err. */
int quote_units_define(quote_unitset *u, const char *name, double scale, const char *kind,
                       buf *err);

/* The unit named exactly name[0..len) (len 0: the plain-number unit), or NULL.
 * The pointer is owned by u (or static) and valid until u is freed. A NULL u
 * looks up the built-ins only. */
const quote_unit *quote_units_find(const quote_unitset *u, const char *name, size_t len);

/* The same, or NULL with a one-line reason appended to err (may be NULL):
 *   unknown unit "mb" (units are case-sensitive; did you mean MB?) */
const quote_unit *quote_units_lookup(const quote_unitset *u, const char *name, size_t len,
                                     buf *err);

/* The longest built-in byte, fraction or ratio unit whose name s[0..n) starts
 * with: its length (0 if none), and the unit in *unit (may be NULL). What the
 * prose lint calls a unit; where a name must end (word boundaries) is the
 * lint's business. */
size_t quote_units_prefix(const char *s, size_t n, const quote_unit **unit);

/* A value in base units read in unit (224 for 234881024 and MiB), and back.
 * The one conversion the checker's messages and Lua's units.to use. A scale
 * below 1 multiplies by its inverse, which is exact for % and bit (100 and 8)
 * where dividing by 0.01 is not: 0.53125 reads as 53.125%, not 53.12499... */
static inline double quote_in_unit(const quote_unit *unit, double value)
{
    return unit->scale < 1 ? value * (1 / unit->scale) : value / unit->scale;
}
static inline double quote_from_unit(const quote_unit *unit, double x) { return x * unit->scale; }

/* "bytes", "fraction", "ratio" or "count". */
const char *quote_kind_name(quote_kind kind);

/* Parses s[0..len) (need not be NUL-terminated). Returns 0 and fills *out, or -1
 * with a one-line reason appended to err, e.g.
 *   malformed number "1,23.4": thousands groups must have 3 digits
 *   unknown unit "mb" (units are case-sensitive; did you mean MB?) */
int quote_parse(const char *s, size_t len, const quote_unitset *u, quote *out, buf *err);

/* Checks value (base units) against q. Exact unless approx is true or q carries
 * a mark; approximate passes when |value - quoted| <= rel_tol * |quoted|, both
 * in base units. expr is only used in the message (NULL reads as "value").
 * Returns true when the figure agrees. Otherwise appends one line to msg:
 *   quoted 40 GB, but kv.bytes(m, 131072) = 42.95 GB (40.00 GiB); did you mean GiB?
 * with the value at two more decimals than the quote and at most one hint:
 * the companion unit (GB/GiB, MB/MiB, KB/KiB, TB/TiB), a factor of 2 either way
 * (bytes and counts), a fraction quoted without its 100 ("did you mean 28.1%?")
 * or a percentage returned instead of a fraction, "." used as a thousands
 * separator, how the value rounds when an exact quote is one last digit off
 * ("rounds to 12.3 GiB (half away from zero)"). These hints live here, with
 * the rule, and nowhere else; approximate failures
 * also say how far off the value is and the tolerance. u (may be NULL) is where
 * companions are looked up. */
bool quote_check(const quote *q, const char *expr, double value, bool approx, double rel_tol,
                 const quote_unitset *u, buf *msg);

/* Appends the tooltip of a passing figure: the value in base units, then in the
 * quote's unit at one more decimal than the quote:
 *   234,881,024 B = 224.0 MiB      0.53125 = 53.1% (for "53%")      7
 * Units with scale 1 show the value once: "234,881,024 B", "7.03125×".
 * The text has nothing to escape in HTML (no unit name holds & < > " '). */
void quote_describe(const quote *q, double value, const quote_unitset *u, buf *out);

/* Appends v with decimals digits after the point (clamped to 0..20), rounded
 * half away from zero as above, and "," between thousands: 1,234,567.89.
 * No locale is consulted. NaN and infinities print as nan, inf, -inf. */
void quote_format_number(double v, int decimals, buf *out);
/* The same with sep (at most 3 bytes, may be "") between thousands instead of
 * ",": the one formatter behind both. */
void quote_format_number_sep(double v, int decimals, const char *sep, buf *out);

/* Appends value (base units) written as q writes its number: in q's unit,
 * rounded by the rule above to decimals digits after the point, with q's
 * minus sign (- or U+2212) or plus, q's thousands separator ("," thin space,
 * narrow no-break space, or none when q's number has none) and, after the
 * number, exactly what follows it in q (spaces and unit); q's approximate
 * mark is left out. For q "234,881,024 B" and 234938368, decimals 0:
 * "234,938,368 B". What check --fix writes and refuted figures show. */
void quote_restate(const quote *q, double value, int decimals, buf *out);

#endif
