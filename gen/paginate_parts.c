/* paginate.h's parts of a report page: where a figure's row is, from its
 * place on its page alone. Apart from paginate.c because a figure's link
 * needs this and nothing else of the plan (figure.c links without the
 * content index). */
#include "paginate.h"

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
