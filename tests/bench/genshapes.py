#!/usr/bin/env python3
"""genshapes: kvsite projects of one corpus shape, for make bench (issue 17).

    genshapes.py SHAPE PAGES OUTDIR

OUTDIR must be missing or empty; it receives a kvsite project (site.yaml and
content/, no templates/: it builds with the default theme). Every page is
content/.../pNNNNN.md (NNNNN its number), about 2 KB of prose with a date
and a tag, plus what its shape adds:

    tags    5 tags a page out of PAGES / 2 (about 10 pages a tag: a tag page
            and an index entry each)
    deep    sections nested six deep, 4 a level (5,460 sections), the pages
            spread over the deepest ones
    wide    PAGES / 5 top-level sections of 5 pages (a menu and a home page
            of that many sections)
    links   50 relative links a page to other pages (every one checked)
    code    a fenced block in each language kvsite highlights, and one it
            does not
    notes   60 footnotes and a 100-row table
    assets  2 images a page, files beside it under content/

Shapes other than deep and wide put the pages in 4 sections. Every link is
valid, so each build must succeed. Deterministic: page i draws from its own
generator, seeded with i, so the same arguments give the same bytes.

Exit status: 0 done, 1 I/O error, 2 usage error."""

import os
import random
import sys

SHAPES = ("tags", "deep", "wide", "links", "code", "notes", "assets")
MAX_PAGES = 100000
WORDS = ("cache token layer head value key page block prefix window decode prompt "
         "batch memory bandwidth scheduler kernel sequence allocator budget").split()
# one block a language kvsite highlights (gen/highlight.h), and one it does not
CODE = (
    ("c", "static int twice(int x)\n{\n    /* %d */\n    return 2 * x;\n}\n"),
    ("lua", "local function twice(x)\n  -- %d\n  return 2 * x\nend\nprint(twice(3))\n"),
    ("python", "def twice(x):\n    # %d\n    return 2 * x\n\nprint(twice(3))\n"),
    ("sh", "for i in 1 2 3; do\n  echo \"$i\"  # %d\ndone\n"),
    ("json", "{\"layers\": %d, \"heads\": [1, 2, 4], \"name\": \"m\"}\n"),
    ("yaml", "layers: %d\nheads:\n  - 1\n  - 2\nname: m  # a model\n"),
    ("markdown", "# Notes %d\n\nSome *emphasis* and a [link](https://example.org/).\n"),
    ("rust", "fn twice(x: i32) -> i32 { 2 * x + %d }\n"),
)
PNG = b"\x89PNG\r\n\x1a\n"


def sentence(r, k):
    return " ".join(r.choice(WORDS) for _ in range(k)).capitalize() + "."


def prose(r, sentences):
    return " ".join(sentence(r, r.randint(8, 16)) for _ in range(sentences))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def section_index(path, title):
    write(path + "/_index.md", '---\ntitle: "%s"\n---\n\n%s\n' % (title, title))


def deep_dirs():
    """The 4,096 deepest folders of a tree six deep, 4 a level."""
    level = [""]
    for depth in range(6):
        level = ["%s/d%d%d" % (p, depth, k) if p else "d%d%d" % (depth, k)
                 for p in level for k in range(4)]
    return level


def main(argv):
    if len(argv) != 4 or argv[1] not in SHAPES or not argv[2].isdigit():
        sys.stderr.write("usage: genshapes.py %s PAGES OUTDIR\n" % "|".join(SHAPES))
        return 2
    shape, pages, out = argv[1], int(argv[2]), argv[3]
    if not 1 <= pages <= MAX_PAGES:
        sys.stderr.write("genshapes: PAGES must be 1 to %d\n" % MAX_PAGES)
        return 2
    if os.path.exists(out) and os.listdir(out):
        sys.stderr.write("genshapes: %s is not empty\n" % out)
        return 2
    content = out + "/content"
    site = "title: shapes\nbase_url: \"https://example.org/\"\nlanguage: en\n"
    files = pages * 3 + 6000  # the assets shape: three files a page
    if files > 100000:  # over the default limits.files
        site += "limits:\n  files: %d\n" % files
    write(out + "/site.yaml", site)
    write(content + "/_index.md", "---\ntitle: Home\n---\n\nThe %s shape.\n" % shape)

    # the folder of each page, and the sections' index pages
    if shape == "deep":
        leaves = deep_dirs()
        folder = [leaves[i % len(leaves)] for i in range(pages)]
        seen = set()
        for leaf in leaves:
            parts = leaf.split("/")
            for d in range(1, len(parts) + 1):
                p = "/".join(parts[:d])
                if p not in seen:
                    seen.add(p)
                    section_index(content + "/" + p, "Section " + parts[d - 1])
    else:
        nsec = max(1, pages // 5) if shape == "wide" else 4
        folder = ["s%05d" % (i % nsec) for i in range(pages)]
        for s in range(min(nsec, pages)):
            section_index(content + "/s%05d" % s, "Section %d" % s)

    ntags = max(1, pages // 2)
    for i in range(pages):
        r = random.Random(i)
        name = "p%05d" % i
        tags = ["t%05d" % r.randrange(ntags) for _ in range(5)] if shape == "tags" \
            else ["topic%d" % (i % 7)]
        fm = '---\ntitle: "Page %d: %s"\ndate: 2024-%02d-%02d\ntags: [%s]\n---\n\n' % (
            i, sentence(r, 4)[:-1], 1 + i % 12, 1 + i % 28,
            ", ".join('"%s"' % t for t in dict.fromkeys(tags)))
        body = [fm, prose(r, 8), "\n\n## First part\n\n", prose(r, 6), "\n\n"]
        here = folder[i]
        if shape == "links":
            for k in range(50):
                j = r.randrange(pages)
                rel = os.path.relpath(content + "/%s/p%05d.md" % (folder[j], j),
                                      content + "/" + here)
                body.append("- [page %d, link %d](%s)\n" % (j, k, rel))
            body.append("\n")
        elif shape == "code":
            for lang, text in CODE:
                body.append("%s\n\n```%s\n%s```\n\n" % (sentence(r, 10), lang, text % i))
        elif shape == "notes":
            for k in range(60):
                body.append("%s[^n%d]\n\n" % (sentence(r, 12), k))
            body.append("| row | bytes | word |\n|---|---:|---|\n")
            for k in range(100):
                body.append("| r%d | %d | %s |\n" % (k, k * (i + 1), r.choice(WORDS)))
            body.append("\n")
            for k in range(60):
                body.append("[^n%d]: Note %d on the %s.\n" % (k, k, r.choice(WORDS)))
        elif shape == "assets":
            for k in range(2):
                img = "%s-%d.png" % (name, k)
                write("%s/%s/%s" % (content, here, img), PNG + bytes([i % 251, k]) * 1000)
                body.append("![figure %d of page %d](%s)\n\n%s\n\n" % (k, i, img, prose(r, 2)))
        body.append("## Last part\n\n%s\n" % prose(r, 4))
        write("%s/%s/%s.md" % (content, here, name), "".join(body))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except OSError as e:
        sys.stderr.write("genshapes: %s\n" % e)
        sys.exit(1)
