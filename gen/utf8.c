#include "utf8.h"

#include <string.h>

size_t utf8_char_len(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xE0) == 0xC0)
        return 2;
    if ((p[0] & 0xF0) == 0xE0)
        return 3;
    if ((p[0] & 0xF8) == 0xF0)
        return 4;
    return 1;
}

uint32_t utf8_decode(const unsigned char *p, size_t n)
{
    switch (n) {
    case 2: return ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    case 3: return ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    case 4:
        return ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
               ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    default: return p[0];
    }
}

size_t utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

bool utf8_valid(const char *s, size_t len, size_t *bad)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        /* ASCII runs, eight bytes at a time */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        /* runs of three-byte sequences (CJK text) in a loop of their own:
         * E1-EC and EE-EF take any continuation; E0 and ED are checked the
         * long way below */
        while (i + 3 <= len) {
            unsigned c = p[i];
            uint16_t cont;
            memcpy(&cont, p + i + 1, 2);
            if (c - 0xE1u > 0xEFu - 0xE1u || c == 0xED || (cont & 0xC0C0u) != 0x8080u)
                break;
            i += 3;
        }
        if (i >= len)
            break;
        if (p[i] < 0x80)
            continue;
        size_t n = utf8_char_len(p + i);
        if (n == 1 || i + n > len)
            goto fail;
        for (size_t k = 1; k < n; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                goto fail;
        uint32_t cp = utf8_decode(p + i, n);
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            goto fail;
        i += n;
    }
    return true;
fail:
    if (bad)
        *bad = i;
    return false;
}

void utf8_position(const char *s, size_t off, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < off; i++) {
        if (s[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

int utf8_column(const char *line, size_t len, int byte_col)
{
    if (byte_col <= 1)
        return byte_col;
    size_t end = (size_t)byte_col - 1, i = 0;
    int col = 1;
    const unsigned char *s = (const unsigned char *)line;
    while (i < end && i < len) {
        size_t n = s[i] < 0x80 ? 1 : utf8_char_len(s + i);
        if (n > 1 && (i + n > end || i + n > len || !utf8_valid(line + i, n, NULL)))
            n = 1; /* a stray or cut byte: one column */
        i += n;
        col++;
    }
    if (end > i)
        col += (int)(end - i);
    return col;
}
