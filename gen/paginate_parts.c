/* paginate.h's arithmetic: a listing's pages and their paths, and the parts
 * of a report page (where a figure's row is, from its place on its page
 * alone). Apart from paginate.c because a figure's links need this and
 * nothing else of the plan (figure.c and sources.c link without the content
 * index). */
#include "paginate.h"

#include <string.h>

size_t paginate_count(size_t n, size_t per)
{
    if (per == 0)
        per = PAGINATE_DEFAULT;
    return n == 0 ? 1 : (n - 1) / per + 1;
}

void paginate_bounds(size_t n, size_t per, size_t number, size_t *lo, size_t *hi)
{
    if (per == 0)
        per = PAGINATE_DEFAULT;
    size_t last = paginate_count(n, per);
    if (number < 1)
        number = 1;
    if (number > last)
        number = last;
    *lo = (number - 1) * per;
    if (*lo > n)
        *lo = n;
    *hi = n - *lo > per ? *lo + per : n;
}

size_t paginate_number_of(size_t pos, size_t per)
{
    return pos / (per ? per : PAGINATE_DEFAULT) + 1;
}

char *paginate_path(const char *first, size_t number)
{
    if (number <= 1)
        return xstrdup(first);
    size_t n = strlen(first);
    return xasprintf("%s%spage/%zu/", first, n && first[n - 1] == '/' ? "" : "/", number);
}

size_t paginate_part_rows(size_t k)
{
    return k >= PAGINATE_REPORT_ROWS ? 1 : PAGINATE_REPORT_ROWS / (k ? k : 1);
}

size_t paginate_part_of(size_t ordinal, size_t rows) { return rows ? ordinal / rows : 0; }

void paginate_part_bounds(size_t nfigs, size_t rows, size_t part, size_t *lo, size_t *hi)
{
    if (!rows) { /* one part: all of them */
        *lo = part ? nfigs : 0;
        *hi = nfigs;
        return;
    }
    *lo = part > nfigs / rows ? nfigs : part * rows;
    *hi = nfigs - *lo > rows ? *lo + rows : nfigs;
}

void paginate_part_suffix(buf *b, size_t part)
{
    if (part > 0)
        buf_printf(b, PAGINATE_PART_DIR "/%zu/", part + 1);
}

char *paginate_part_path(const char *page_path, size_t part)
{
    buf b = BUF_INIT;
    buf_puts(&b, page_path);
    paginate_part_suffix(&b, part);
    return buf_detach(&b);
}
