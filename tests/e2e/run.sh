#!/usr/bin/env bash
# End-to-end tests of the kvsite binary on the fixture projects in tests/fixtures/.
#
#   KVSITE=/abs/path/kvsite bash tests/e2e/run.sh [CASE...]
#
# Every case runs in a fresh copy of its fixture under one temporary folder
# (removed at the end) and prints `ok NAME` or `FAIL NAME: why`, followed by a
# diff (expected first) when messages differ. The last line is `N passed, N failed`;
# the exit status is 1 when a case failed. Naming cases on the command line runs
# only those. Needs bash, coreutils, diff, grep, find and sha256sum.
#
# The cases assert the behaviour DESIGN.md asks for, not whatever the binary
# happens to print: a case that fails names a bug in gen/.
set -u
export LC_ALL=C
unset GITHUB_ACTIONS

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FIX=$ROOT/tests/fixtures
# shellcheck source=cases.sh
. "$HERE/cases.sh"
kvsite_under_test run.sh
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kvsite-e2e.XXXXXX") || exit 2
SHM_DIRS= # projects a test made in /dev/shm
trap 'rm -rf "$TMP" $SHM_DIRS' EXIT

# ---------- the harness ----------

CASE=""   # name of the running case
W=""      # its project folder
WHY=""    # reasons it failed, "; "-separated
DIFFS=""  # diffs to show under the FAIL line
RC=0      # exit status of the last kvsite run
NCOPY=0

fail() { WHY=${WHY:+$WHY; }$1; }

# fresh FIXTURE: a new copy of tests/fixtures/FIXTURE (without its expected/)
fresh() {
    NCOPY=$((NCOPY + 1))
    W=$TMP/$NCOPY-$CASE/project
    mkdir -p "$W"
    cp -R "$FIX/$1/." "$W/"
    rm -rf "$W/expected"
}

# kv ARGS...: runs kvsite in the project; stdout in $W.out, stderr in $W.err
kv() {
    # the outer redirection keeps bash's own "Segmentation fault" notes out
    { (cd "$W" && exec timeout -k 5 60 "$KVSITE" "$@") <"${KV_STDIN:-/dev/null}" >"$W.out" 2>"$W.err"
      RC=$?; } 2>/dev/null
}

# page PATH: writes stdin to PATH in the project
page() {
    mkdir -p "$(dirname "$W/$1")"
    cat >"$W/$1"
}

describe_rc() {
    if [ "$1" -eq 124 ]; then echo "timed out"
    elif [ "$1" -gt 128 ]; then echo "crashed (signal $(($1 - 128)))"
    else echo "exit $1"; fi
}

expect_rc() {
    if [ "$RC" -ne "$1" ]; then
        fail "$(describe_rc "$RC"), expected exit $1"
        DIFFS+="    stderr (last 5 lines):"$'\n'"$(tail -n 5 "$W.err" | sed 's/^/    | /')"$'\n'
    fi
}

# show_diff WHAT EXPECTED_FILE ACTUAL_FILE
show_diff() {
    if ! cmp -s "$2" "$3"; then
        fail "$1 differs"
        DIFFS+="$(diff -u --label expected --label actual "$2" "$3" | sed 's/^/    /')"$'\n'
        return 1
    fi
}

# expect_diags: stdin lists every line stderr must have before the summary line,
# in order; @W@ stands for the project folder.
expect_diags() {
    sed "s|@W@|$W|g" >"$W.want"
    sed '$d' "$W.err" >"$W.got"
    show_diff "diagnostics" "$W.want" "$W.got"
}

# expect_summary REGEX: the last line of stderr
expect_summary() {
    local last
    last=$(tail -n 1 "$W.err")
    if ! grep -Eq "$1" <<<"$last"; then
        fail "last stderr line is \"$last\", expected /$1/"
    fi
}

SUMMARY_OK='^kvsite: built [0-9]+ pages, [0-9]+ figures \([0-9]+ computed, [0-9]+ measured, [0-9]+ cited\), [0-9]+ warnings?, 0 errors in [0-9.]+ s$'
SUMMARY_FAILED='^kvsite: failed to build .*[1-9][0-9]* errors? in [0-9.]+ s; the previous output is unchanged$'
SUMMARY_CONFIG='^kvsite: configuration error: nothing was built$'

# hashes DIR: sha256 of every file under DIR, by path
hashes() {
    [ -d "$1" ] || return 0
    (cd "$1" && find . \( -type f -o -type l \) -print0 | sort -z | xargs -0 -r sha256sum)
}

# listing DIR: every entry under DIR (folders too) and the hashes of the files
listing() {
    [ -d "$1" ] || return 0
    (cd "$1" && find . | sort)
    hashes "$1"
}

# Builds stage in the state folder beside the output (.kvsite/site.prev is
# kept on purpose: the next build reuses it); nothing named after a process
# may be left behind.
expect_no_staging() {
    local left
    left=$( (find "$(dirname "$W")" "$W" -maxdepth 1 \( -name '.*.staging-*' -o -name '.*.old-*' \)
             find "$W/.kvsite" -maxdepth 1 -name '*.old-*') 2>/dev/null | head -n 3)
    [ -z "$left" ] || fail "staging folder left behind: $left"
}

expect_file() { [ -f "$W/$1" ] || fail "$1 missing"; }
expect_no_file() { [ ! -e "$W/$1" ] || fail "$1 should not exist"; }

# expect_grep FILE TEXT: FILE (in the project) contains TEXT, a fixed string
expect_grep() {
    if [ ! -f "$W/$1" ]; then fail "$1 missing"
    elif ! grep -qF -- "$2" "$W/$1"; then fail "$1 lacks: $2"; fi
}
expect_no_grep() {
    if [ -f "$W/$1" ] && grep -qF -- "$2" "$W/$1"; then fail "$1 should not contain: $2"; fi
}

# The good fixture, built once and snapshotted: the starting point of every
# case that breaks one thing.
good_built() {
    fresh good
    kv build
    if [ "$RC" -ne 0 ]; then
        fail "the good fixture did not build: $(describe_rc "$RC")"
        DIFFS+="$(tail -n 5 "$W.err" | sed 's/^/    | /')"$'\n'
        return 1
    fi
    hashes "$W/site" >"$W.snap"
}

# After a build that must fail: exit 1, exactly these diagnostics (stdin), the
# summary, the previous site/ byte for byte, no staging folder.
expect_failed_build() {
    expect_rc 1
    expect_diags
    expect_summary "$SUMMARY_FAILED"
    hashes "$W/site" >"$W.snap2"
    cmp -s "$W.snap" "$W.snap2" || fail "site/ changed although the build failed"
    expect_no_staging
}

# ---------- 1. the good site ----------

t_good_build() {
    fresh good
    kv build
    expect_rc 0
    expect_diags </dev/null
    expect_summary '^kvsite: built 5 pages, 11 figures \(9 computed, 1 measured, 1 cited\), 0 warnings, 0 errors in [0-9.]+ s$'
    (cd "$W/site" 2>/dev/null && find . -type f | sed 's|^\./||' | sort) >"$W.files"
    show_diff "list of files in site/" "$FIX/good/expected/files.txt" "$W.files"
    expect_no_staging
}

t_good_golden_pages() {
    fresh good
    kv build
    expect_rc 0
    local p
    for p in articles/kv-cache/index.html notes/week-1/index.html; do
        if [ -f "$W/site/$p" ]; then
            show_diff "site/$p" "$FIX/good/expected/$p" "$W/site/$p"
        else
            fail "site/$p missing"
        fi
    done
}

# A figure in a table cell is shown like any other figure.
t_good_table_figures() {
    fresh good
    kv build
    expect_rc 0
    expect_grep site/articles/kv-cache/index.html '<td><span class="fig" id="articles-kv-cache-8" data-tier="computed"><button type="button" class="fig-q" popovertarget="articles-kv-cache-8-d" aria-describedby="articles-kv-cache-8-d">1.25 GiB</button><span class="fig-pop" popover id="articles-kv-cache-8-d">'
    expect_grep site/articles/kv-cache/index.html '<span class="fig-k">Value</span> 42,949,672,960 B = 40.0 GiB</span><a class="fig-report" href="/checks/#articles-kv-cache-9">Its row in the checks report →</a></span></span></td>'
}

# Every figure links to a row of the checks report that exists, and every cited
# figure to an entry of the sources page (the summary's figure included).
t_good_figure_anchors() {
    fresh good
    kv build
    expect_rc 0
    local a missing=""
    [ -d "$W/site" ] || return
    for a in $(grep -rhoE 'href="/checks/#[^"]*"' "$W/site" | sed 's|.*#||; s|"$||' | sort -u); do
        grep -qF "id=\"$a\"" "$W/site/checks/index.html" || missing+=" /checks/#$a"
        grep -qF "\"anchor\": \"$a\"" "$W/site/checks.json" || missing+=" checks.json:$a"
    done
    for a in $(grep -rhoE 'href="/sources/#[^"]*"' "$W/site" | sed 's|.*#||; s|"$||' | sort -u); do
        grep -qF "id=\"$a\"" "$W/site/sources/index.html" || missing+=" /sources/#$a"
    done
    [ -z "$missing" ] || fail "figure links to anchors that do not exist:$missing"
    # one per figure, in its details (the cited one too)
    [ "$(grep -rhoE 'href="/checks/#[^"]*"' "$W/site" | wc -l)" -eq 11 ] ||
        fail "expected 11 links to the checks report"
}

t_good_checks_json() {
    fresh good
    kv build
    expect_rc 0
    local j=site/checks.json
    [ -f "$W/$j" ] || { fail "$j missing"; return; }
    expect_grep $j '"totals": {"figures": 11, "computed": 9, "measured": 1, "cited": 1, "refuted": 0, "passed": 11, "failed": 0}'
    expect_grep $j '{"page": "/articles/kv-cache/", "file": "content/articles/kv-cache.md", "line": 18, "col": 33, "quote": "40 GiB", "expr": "kv_bytes(131072)", "mode": "=", "value": 42949672960, "tier": "computed", "status": "pass"'
    expect_grep $j '"line": 19, "col": 37, "quote": "42.9 GB", "expr": "kv_bytes(131072)", "mode": "≈10%", "value": 42949672960, "tier": "computed", "status": "pass"'
    expect_grep $j '"line": 22, "col": 19, "quote": "2.5×", "expr": "paper2024", "mode": "cite", "value": null, "tier": "cited", "status": "pass", "detail": "A paper about caches"'
    expect_grep $j '"quote": "1.25 GiB", "expr": "run_bytes()", "mode": "=", "value": 1342177280, "tier": "measured", "status": "pass", "detail": "run_bytes() = 1,342,177,280 B = 1.250 GiB", "provenance": "source: fixture run; machine: none"'
    # the front-matter summary, checked through markdown_inline, at its own line
    expect_grep $j '"file": "content/articles/kv-cache.md", "line": 5, "col": '
    expect_grep $j '"quote": "40 GiB", "expr": "2*80*8*128*131072*2", "mode": "=", "value": 42949672960, "tier": "computed", "status": "pass"'
    expect_grep $j '{"page": "/notes/week-1/", "file": "content/notes/week-1.md", "line": 11, "col": 21, "quote": "50%", "expr": "4/8", "mode": "=", "value": 0.5, "tier": "computed", "status": "pass"'
    [ "$(grep -c '"tier": ' "$W/$j")" -eq 11 ] || fail "$j does not list 11 figures"
}

t_good_feed_sitemap() {
    fresh good
    kv build
    expect_rc 0
    [ -f "$W/site/feed.xml" ] || { fail "site/feed.xml missing"; return; }
    expect_grep site/feed.xml '<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="en">'
    expect_grep site/feed.xml '<link href="https://example.org/articles/kv-cache/"/>'
    expect_grep site/feed.xml '<link href="https://example.org/notes/week-1/"/>'
    expect_grep site/feed.xml '<updated>2026-01-15T00:00:00Z</updated>'
    [ "$(grep -c '<entry>' "$W/site/feed.xml")" -eq 2 ] || fail "feed.xml should have 2 entries"
    local u
    for u in "" articles/ articles/kv-cache/ notes/ notes/week-1/ tags/ tags/kv-cache/ tags/内存/ sources/ checks/; do
        expect_grep site/sitemap.xml "<loc>https://example.org/$u</loc>"
    done
    expect_grep site/sitemap.xml '<url><loc>https://example.org/articles/kv-cache/</loc><lastmod>2026-01-15</lastmod></url>'
    expect_no_grep site/sitemap.xml 404.html
}

# The feed shows a summary as text: a figure reads as its quote, not as source.
t_good_feed_summary() {
    fresh good
    kv build
    expect_rc 0
    expect_grep site/feed.xml '<summary>Llama 70B at 128K tokens needs 40 GiB of cache.</summary>'
    expect_grep site/feed.xml '<summary>Notes of the first meeting.</summary>'
}

t_good_drafts() {
    fresh good
    kv build
    expect_rc 0
    expect_no_file site/articles/draft
    expect_no_grep site/feed.xml /articles/draft/
    expect_no_grep site/sitemap.xml /articles/draft/
    expect_no_grep site/articles/index.html Unfinished
    kv build --drafts
    expect_rc 0
    expect_summary '^kvsite: built 6 pages, '
    expect_grep site/articles/draft/index.html '<h1>Unfinished</h1>'
    expect_grep site/articles/index.html '<li><a href="/articles/draft/">Unfinished</a></li>'
    expect_grep site/feed.xml '<link href="https://example.org/articles/draft/"/>'
    expect_grep site/sitemap.xml '<loc>https://example.org/articles/draft/</loc>'
    expect_no_staging
}

t_good_output_folder() {
    fresh good
    kv build -o out
    expect_rc 0
    expect_no_file site
    (cd "$W/out" 2>/dev/null && find . -type f | sed 's|^\./||' | sort) >"$W.files"
    show_diff "list of files in out/" "$FIX/good/expected/files.txt" "$W.files"
    # -C from elsewhere, and an absolute -o outside the project
    { (cd "$TMP" && exec timeout 60 "$KVSITE" build -C "$W" -o "$W/../abs" 2>"$W.err")
      RC=$?; } 2>/dev/null
    expect_rc 0
    [ -f "$W/../abs/articles/kv-cache/index.html" ] || fail "-C DIR -o /abs/OUT wrote nothing there"
    expect_no_file site
    expect_no_staging
}

# kvsite's state goes in one folder beside the output, .kvsite/, named after
# the output (site.*, out.*), and nowhere else; an older kvsite's .site.*
# files are left alone. A state folder that is a link or a file is refused.
t_good_state_folder() {
    fresh good
    printf 'an old cache\n' >"$W/.site.cache"
    kv build
    expect_rc 0
    kv build -o out
    expect_rc 0
    [ "$(cd "$W" && find . -maxdepth 1 -name '.site*' | sort | tr '\n' ' ')" = "./.site.cache " ] ||
        fail "beside the output: $(cd "$W" && find . -maxdepth 1 -name '.site*' -o -maxdepth 1 -name '.out*')"
    expect_grep .site.cache "an old cache"
    [ -f "$W/.kvsite/site.lock" ] && [ -f "$W/.kvsite/site.cache" ] && [ -f "$W/.kvsite/out.stamp" ] ||
        fail "no state in .kvsite/: $(ls -A "$W/.kvsite" 2>&1 | tr '\n' ' ')"
    local other
    other=$(cd "$W/.kvsite" && find . -mindepth 1 -maxdepth 1 ! -name 'site.*' ! -name 'out.*')
    [ -z "$other" ] || fail "more than the outputs' state in .kvsite/: $other"
    # a link: refused, nothing written where it leads
    fresh good
    mkdir "$W/../elsewhere"
    ln -s ../elsewhere "$W/.kvsite"
    kv build
    expect_rc 2
    grep -qF "/.kvsite is a symbolic link: refused" "$W.err" || fail "no clear error: $(cat "$W.err")"
    [ -z "$(ls -A "$W/../elsewhere")" ] || fail "wrote through the link: $(ls -A "$W/../elsewhere")"
    expect_no_file site
    # a file: refused
    rm "$W/.kvsite"
    printf 'x\n' >"$W/.kvsite"
    kv build
    expect_rc 2
    grep -qF "/.kvsite exists and is not a folder: refused" "$W.err" || fail "no clear error: $(cat "$W.err")"
    expect_no_file site
}

t_good_reproducible() {
    fresh good
    kv build -j 1 -o out1
    expect_rc 0
    kv build -j 2 -o out2
    expect_rc 0
    kv build
    expect_rc 0
    hashes "$W/site" >"$W.h0"
    kv build
    expect_rc 0
    local d
    for d in out1 out2 site; do
        hashes "$W/$d" >"$W.h"
        show_diff "sha256 of $d/ against the first build" "$W.h0" "$W.h" || break
    done
    [ -s "$W.h0" ] || fail "no files built"
    expect_no_staging
}

# The staging folder is reused: a page that is gone must not come back, and
# after the same tree is built again the output is byte-identical.
t_good_stale_files_removed() {
    fresh good
    kv build
    expect_rc 0
    hashes "$W/site" >"$W.h0"
    page content/notes/week-2.md <<'EOF'
---
title: Week 2
date: 2026-01-22
---
Second meeting.
EOF
    kv build
    expect_rc 0
    expect_file site/notes/week-2/index.html
    rm "$W/content/notes/week-2.md"
    kv build
    expect_rc 0
    expect_no_file site/notes/week-2
    expect_no_grep site/sitemap.xml week-2
    kv build
    expect_rc 0
    expect_no_file site/notes/week-2
    hashes "$W/site" >"$W.h"
    show_diff "sha256 of site/ against the first build" "$W.h0" "$W.h"
    expect_no_staging
}

t_good_check_writes_nothing() {
    fresh good
    listing "$W" >"$W.before"
    kv check
    expect_rc 0
    expect_diags </dev/null
    expect_summary '^kvsite: checked 5 pages, 11 figures \(9 computed, 1 measured, 1 cited\), 0 warnings, 0 errors in [0-9.]+ s$'
    listing "$W" >"$W.after"
    show_diff "the project after kvsite check" "$W.before" "$W.after"
    expect_no_file site
    [ -z "$(find "$(dirname "$W")" -mindepth 1 -maxdepth 1 ! -name project ! -name 'project.*')" ] ||
        fail "kvsite check wrote next to the project"
    expect_no_staging
    # and it fails like a build on a broken page
    page content/articles/bad.md <<'EOF'
---
title: Bad
---
`1 GB {= 2}`
EOF
    kv check
    expect_rc 1
    expect_diags <<'EOF'
content/articles/bad.md:4:2: error: quoted 1 GB, but 2 = 0.00 GB
EOF
    expect_no_file site
}

# ---------- 2. bad inputs: located, exit 1, previous output untouched ----------

t_bad_no_front_matter() {
    good_built || return
    page content/articles/bad.md <<'EOF'
Just text, no header.
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:1:1: error: missing front matter: a page starts with a line "---", then YAML (title: ...), then a closing "---"
EOF
}

t_bad_unterminated_front_matter() {
    good_built || return
    page content/articles/bad.md <<'EOF'
---
title: Open
Body text.
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:1:1: error: front matter is not terminated: no closing "---" line after the opening one
EOF
}

# YAML errors are located in the Markdown file, not in the YAML snippet.
t_bad_invalid_yaml() {
    good_built || return
    page content/articles/bad.md <<'EOF'
---
title: Bad YAML
summary: fine
weight: 3
foo: bar: baz
---
Body.
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:5:9: error: invalid YAML: mapping values are not allowed in this context
EOF
}

t_bad_wrong_types() {
    good_built || return
    page content/articles/bad.md <<'EOF'
---
title: Wrong types
tags: 3
draft: "yes"
weight: x
date: 2026-13-40
---
Body.
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:3:7: error: front matter "tags" must be a list of strings (tags: [a, b]), not an integer
content/articles/bad.md:4:8: error: front matter "draft" must be true or false, not a string
content/articles/bad.md:5:9: error: front matter "weight" must be an integer, not a string
content/articles/bad.md:6:7: error: front matter "date": "2026-13-40" is not a date (YYYY-MM-DD, optionally with a time)
EOF
}

t_bad_no_title() {
    good_built || return
    page content/articles/bad.md <<'EOF'
---
date: 2026-01-01
---
Body.
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:2:1: error: front matter has no "title"
EOF
}

# Two pages on one URL: one error naming both, and no follow-up errors (the
# links to the other page are fine).
t_bad_duplicate_url() {
    good_built || return
    page content/articles/bad.md <<'EOF'
---
title: Same slug
slug: kv-cache
---
Body.
EOF
    kv build
    expect_rc 1
    sed '$d' "$W.err" >"$W.got"
    if [ "$(wc -l <"$W.got")" -ne 1 ] ||
        ! grep -Eq '^content/articles/(bad|kv-cache)\.md:[0-9]+:[0-9]+: error: two pages on one URL /articles/kv-cache/: this page and content/articles/(kv-cache|bad)\.md$' "$W.got"; then
        fail "expected exactly one located \"two pages on one URL\" error"
        DIFFS+="$(sed 's/^/    | /' "$W.got")"$'\n'
    fi
    expect_summary "$SUMMARY_FAILED"
    hashes "$W/site" >"$W.snap2"
    cmp -s "$W.snap" "$W.snap2" || fail "site/ changed although the build failed"
    expect_no_staging
}

t_bad_unsafe_slug() {
    good_built || return
    page content/articles/bad1.md <<'EOF'
---
title: Dots
slug: ../evil
---
EOF
    page content/articles/bad2.md <<'EOF'
---
title: Slash
slug: a/b
---
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad1.md:3:7: error: slug "../evil" is not a safe path segment (letters, digits, '-', '_', '.'; not starting with '.'; no '/')
content/articles/bad2.md:3:7: error: slug "a/b" is not a safe path segment (letters, digits, '-', '_', '.'; not starting with '.'; no '/')
EOF
    expect_no_file evil
}

t_bad_broken_md_link() {
    good_built || return
    page content/articles/bad.md <<'EOF'
---
title: Links
---
See [the missing page](missing.md) here.
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:4:5: error: broken link "missing.md": there is no page content/articles/missing.md
EOF
}

t_bad_broken_root_link() {
    good_built || return
    page content/articles/bad.md <<'EOF'
---
title: Links
---
Go [nowhere](/nowhere/) now.
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:4:4: error: broken link to /nowhere/: no page or file there
EOF
}

t_bad_broken_fragment() {
    good_built || return
    page content/articles/bad.md <<'EOF'
---
title: Links
---
See [x](kv-cache.md#nope) and
[y](#nada).
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:4:5: error: broken link to /articles/kv-cache/#nope: /articles/kv-cache/ has no heading or anchor with id "nope"
content/articles/bad.md:5:1: error: broken link to /articles/bad/#nada: /articles/bad/ has no heading or anchor with id "nada"
EOF
}

# template: in front matter names a file that is not there: at that line.
# A link that a template writes is checked too: one error for the template,
# not one per page that uses it.
t_bad_template_broken_link() {
    good_built || return
    sed -i 's|<p class="count">|<p class="count"><a href="/nowhere/">x</a>|' "$W/templates/page.html"
    kv build
    expect_failed_build <<'EOF'
templates/page.html: error: broken link to /nowhere/: no page or file there; in the output for /articles/kv-cache/
EOF
}

# Links a template writes are read as a browser reads them: href and src in
# double, single or no quotes are checked; data-href is not a link.
t_bad_template_link_quoting() {
    good_built || return
    sed -i "s|<p class=\"count\">|<p class=\"count\"><a href='/single/'>x</a><a href=/bare/>y</a><a data-href=\"/data/\">z</a><img alt=\"\" src = '/img/x.png'><a href='/articles/kv-cache/?a=1\&amp;b=2'>ok</a>|" "$W/templates/page.html"
    kv build
    expect_failed_build <<'EOF'
templates/page.html: error: broken link to /single/: no page or file there; in the output for /articles/kv-cache/
templates/page.html: error: broken link to /bare/: no page or file there; in the output for /articles/kv-cache/
templates/page.html: error: broken link to /img/x.png: no page or file there; in the output for /articles/kv-cache/
EOF
}

# page.toc and page.figures are views of the page being rendered: a template
# that keeps them where the next page can reach them (the metatable `page`
# shares with every page) must not read freed memory (a use-after-free the
# sanitizers caught); the metatable is locked, and a view kept anyway fails.
t_views_kept_past_their_page() {
    good_built || return
    { cat <<'EOF'
<p>kept:{{ tostring(select(2, pcall(function() return #getmetatable(page).kept end))) }}</p>
<p>keep:{{ tostring((pcall(function() getmetatable(page).kept = page.toc end))) }}</p>
<p>keepfig:{{ tostring((pcall(function() getmetatable(page).figs = page.figures end))) }}</p>
<p>meta:{{ tostring(getmetatable(page)) }}</p>
EOF
      cat "$W/templates/page.html"; } >"$W/templates/page.html.new"
    mv "$W/templates/page.html.new" "$W/templates/page.html"
    kv build
    expect_rc 0
    for f in site/articles/kv-cache/index.html site/notes/week-1/index.html; do
        expect_grep "$f" "<p>keep:false</p>"
        expect_grep "$f" "<p>keepfig:false</p>"
        expect_grep "$f" "<p>meta:locked</p>"
        expect_no_grep "$f" "<p>kept:1"
    done
}

t_bad_missing_template() {
    good_built || return
    page content/articles/bad.md <<'EOF'
---
title: Missing template
template: nope.html
---
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:3:11: error: template "nope.html" not found in templates/
EOF
}

# The template a page falls back to is gone: every page that needs it fails.
t_bad_missing_page_template() {
    good_built || return
    rm "$W/templates/page.html"
    kv build
    expect_failed_build <<'EOF'
content/articles/kv-cache.md: error: template templates/page.html not found
content/notes/week-1.md: error: template templates/page.html not found
EOF
}

t_bad_template_lua_error() {
    good_built || return
    page templates/bad.html <<'EOF'
<p>
{{ page.title }}
{% local x = page.nothing + 1 %}
</p>
EOF
    page content/articles/bad.md <<'EOF'
---
title: Template error
template: bad.html
---
EOF
    kv build
    expect_failed_build <<'EOF'
templates/bad.html:3: error: attempt to perform arithmetic on a nil value (field 'nothing')
EOF
}

t_bad_template_unterminated_tag() {
    good_built || return
    page templates/bad.html <<'EOF'
<p>
{{ page.title

</p>
EOF
    page content/articles/bad.md <<'EOF'
---
title: Template error
template: bad.html
---
EOF
    kv build
    expect_failed_build <<'EOF'
templates/bad.html:2:1: error: unterminated {{ tag: no closing "}}"
EOF
}

t_bad_symlink_out_of_content() {
    good_built || return
    ln -s ../../site.yaml "$W/content/articles/evil.md"
    kv build
    expect_failed_build <<'EOF'
content/articles/evil.md: error: a symbolic link: refused (files under content/ are read without following any; copy the file or folder instead)
EOF
}

t_bad_invalid_utf8() {
    good_built || return
    printf -- '---\ntitle: Bytes\n---\nabc \377 def\n' >"$W/content/articles/bad.md"
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:4:5: error: invalid UTF-8 (byte 0xff)
EOF
}

t_bad_nul_byte() {
    good_built || return
    printf -- '---\ntitle: Bytes\n---\nabc\n12\000 def\n' >"$W/content/articles/bad.md"
    kv build
    expect_failed_build <<'EOF'
content/articles/bad.md:5:3: error: the file contains a NUL byte
EOF
}

t_bad_page_too_large() {
    good_built || return
    printf 'limits:\n  page_bytes: 2048\n' >>"$W/site.yaml"
    { printf -- '---\ntitle: Big\n---\n'; head -c 3000 /dev/zero | tr '\0' x; echo; } >"$W/content/articles/big.md"
    kv build
    expect_failed_build <<'EOF'
content/articles/big.md: error: page too large (limit 2048 bytes: limits.page_bytes in site.yaml)
EOF
}

t_bad_raw_html_strict() {
    good_built || return
    page content/articles/raw.md <<'EOF'
---
title: Raw
---
Some <b>bold</b> words.

<div>a block</div>
EOF
    kv build --strict
    expect_failed_build <<'EOF'
content/articles/raw.md:4:6: error: raw HTML is not emitted (set markdown.unsafe: true in site.yaml to allow it)
content/articles/raw.md:4:13: error: raw HTML is not emitted (set markdown.unsafe: true in site.yaml to allow it)
content/articles/raw.md:6:1: error: raw HTML is not emitted (set markdown.unsafe: true in site.yaml to allow it)
EOF
}

# A page's run of raw HTML past the first ten places is one warning with
# their count; --strict lists every one (each is an error then).
t_raw_html_folded() {
    good_built || return
    { printf -- '---\ntitle: Raw\n---\n'
      for i in $(seq 1 12); do printf 'Row %d <b>x</b>\n\n' "$i"; done; } >"$W/content/articles/raw.md"
    kv build
    expect_rc 0
    {
        for l in 4 6 8 10 12; do
            for c in 7 11; do
                echo "content/articles/raw.md:$l:$c: warning: raw HTML is not emitted (set markdown.unsafe: true in site.yaml to allow it)"
            done
        done
        echo "content/articles/raw.md:14:7: warning: 14 more places of raw HTML in this file, from here to line 26 (not listed one by one)"
    } | expect_diags
    expect_summary "$SUMMARY_OK"
    kv build --strict
    expect_rc 1
    [ "$(grep -c 'error: raw HTML is not emitted' "$W.err")" = 24 ] ||
        fail "--strict: $(grep -c 'error: raw HTML' "$W.err") errors for raw HTML, expected 24"
    expect_summary "$SUMMARY_FAILED"
}

# unverified_page: content/articles/plain.md, whose "40 GB" (line 4, column
# 17) is a figure neither quoted nor cited
unverified_page() {
    page content/articles/plain.md <<'EOF'
---
title: Plain
---
The cache needs 40 GB at full context.
EOF
}

t_bad_unverified_figure() {
    good_built || return
    unverified_page
    kv build --strict
    expect_failed_build <<'EOF'
content/articles/plain.md:4:17: error: unverified figure "40 GB": quote it as a figure (`40 GB {= EXPR}`) or cite it (`40 GB {cite KEY}`)
EOF
    printf 'figures:\n  unverified: error\n' >>"$W/site.yaml"
    kv build
    expect_failed_build <<'EOF'
content/articles/plain.md:4:17: error: unverified figure "40 GB": quote it as a figure (`40 GB {= EXPR}`) or cite it (`40 GB {cite KEY}`)
EOF
}

# Without --strict an unverified figure is a warning: the build succeeds.
t_good_unverified_warning() {
    fresh good
    unverified_page
    kv build
    expect_rc 0
    expect_diags <<'EOF'
content/articles/plain.md:4:17: warning: unverified figure "40 GB": quote it as a figure (`40 GB {= EXPR}`) or cite it (`40 GB {cite KEY}`)
EOF
    expect_summary '^kvsite: built 6 pages, 11 figures \(9 computed, 1 measured, 1 cited\), 1 warning, 0 errors in [0-9.]+ s$'
    expect_file site/articles/plain/index.html
}

# An up-to-date build prints the warnings the last build saved with its
# stamp. A stamp whose bytes changed is no stamp: the build takes the long
# way and prints its own warnings, never the changed text (nor one left out).
t_changed_stamp_is_no_stamp() {
    fresh good
    unverified_page
    kv build
    expect_rc 0
    kv build
    expect_rc 0
    grep -q '^kvsite: up to date' "$W.err" || { fail "not up to date: $(tail -n 1 "$W.err")"; return; }
    grep -q 'warning: unverified figure "40 GB"' "$W.err" || fail "the saved warning was not printed again"
    LC_ALL=C sed -i 's|unverified figure "40 GB"|unverified figure "41 GB"|' "$W/.kvsite/site.stamp"
    kv build
    expect_rc 0
    grep -q '41 GB' "$W.err" && fail "a changed stamp's text was printed: $(grep '41 GB' "$W.err")"
    grep -q 'warning: unverified figure "40 GB"' "$W.err" || fail "the build after a changed stamp lost its warning"
}

# A figure in a front-matter string shown through markdown_inline is checked
# and located at its line and column in the Markdown file, for plain and for
# double-quoted YAML scalars alike (the column of the quote, as in the body).
t_bad_summary_figure() {
    good_built || return
    page content/articles/sum1.md <<'EOF'
---
title: Summary plain
summary: Needs `40 GB {= 2^35*1.25}` here.
---
EOF
    page content/articles/sum2.md <<'EOF'
---
title: Summary quoted
summary: "Needs `40 GB {= 2^35*1.25}` here."
---
EOF
    kv build
    expect_failed_build <<'EOF'
content/articles/sum1.md:3:17: error: quoted 40 GB, but 2^35*1.25 = 42.95 GB (40.00 GiB); did you mean GiB?
content/articles/sum2.md:3:18: error: quoted 40 GB, but 2^35*1.25 = 42.95 GB (40.00 GiB); did you mean GiB?
EOF
}

# ---------- 3. figures ----------

# fig_page NAME: writes content/NAME.md from stdin after a 3-line front matter,
# so the first body line is line 4.
fig_page() {
    { printf -- '---\ntitle: %s\n---\n' "$1"; cat; } | page "content/$1.md"
}

# fig_expect_fail: builds the bare project; stdin: the diagnostics expected
fig_expect_fail() {
    kv build
    expect_rc 1
    expect_diags
    expect_summary "$SUMMARY_FAILED"
    expect_no_file site
    expect_no_staging
}

fig_expect_pass() {
    kv build
    expect_rc 0
    expect_diags </dev/null
    expect_summary "$SUMMARY_OK"
}

# A relative .md link to a CJK heading id: checked, and valid in the output
# (README: [GQA](gqa.md#代价) -> /techniques/gqa/#代价).
t_good_cjk_fragment_link() {
    fresh bare
    fig_page a <<'EOF'
See [b](b.md#开始-here) and [c](b.md#键值缓存).
EOF
    fig_page b <<'EOF'
## 开始 here

## 键值缓存
EOF
    fig_expect_pass
    expect_grep site/b/index.html '<h2 id="开始-here">开始 here<a class="anchor" href="#开始-here" aria-label="Link to this section" data-pagefind-ignore>#</a></h2>'
    expect_grep site/a/index.html '<a href="/b/#'
    fig_page a <<'EOF'
See [b](b.md#开始-there).
EOF
    kv build
    expect_rc 1
    expect_diags <<'EOF'
content/a.md:4:5: error: broken link to /b/#开始-there: /b/ has no heading or anchor with id "开始-there"; did you mean #开始-here?
EOF
}

t_fig_gb_vs_gib() {
    fresh bare
    fig_page f <<'EOF'
A 70B model at 128K: `40 GB {= 2*80*8*128*131072*2}`.
EOF
    fig_expect_fail <<'EOF'
content/f.md:4:23: error: quoted 40 GB, but 2*80*8*128*131072*2 = 42.95 GB (40.00 GiB); did you mean GiB?
EOF
}

t_fig_exact_passes() {
    fresh bare
    fig_page f <<'EOF'
`40 GiB {= 2*80*8*128*131072*2}` is `42.9 GB {= 2*80*8*128*131072*2}`;
`0.06 GiB {= 2^26}`, `224 MiB {= 224*2^20}`, `53.1% {= 0.531}`, `7× {= 7}`.
EOF
    fig_expect_pass
    expect_grep site/f/index.html '<span class="fig" id="f-2" data-tier="computed"><button type="button" class="fig-q" popovertarget="f-2-d" aria-describedby="f-2-d">42.9 GB</button>'
    expect_grep site/f/index.html '<code>2*80*8*128*131072*2</code></span><span class="fig-row"><span class="fig-k">Value</span> 42,949,672,960 B = 42.95 GB</span><a class="fig-report" href="/checks/#f-2">'
    expect_grep site/checks.json '"totals": {"figures": 6, "computed": 6, "measured": 0, "cited": 0, "refuted": 0, "passed": 6, "failed": 0}'
}

t_fig_percent_fails() {
    fresh bare
    fig_page f <<'EOF'
Share: `25% {= 18/32/2}`.
EOF
    fig_expect_fail <<'EOF'
content/f.md:4:9: error: quoted 25%, but 18/32/2 = 28.13%
EOF
}

t_fig_approximate() {
    fresh bare
    fig_page f <<'EOF'
Pass: `45 GB {≈ 2*80*8*128*131072*2}`, `~41 GiB {~ 2^35*1.25}`, `47 GB {≈10% 2^35*1.25}`.
Fail: `48 GB {≈ 2^35*1.25}` and `50 GB {≈10% 2^35*1.25}`.
EOF
    fig_expect_fail <<'EOF'
content/f.md:5:8: error: quoted 48 GB, but 2^35*1.25 = 42.95 GB, 10.5% off (tolerance 5%)
content/f.md:5:34: error: quoted 50 GB, but 2^35*1.25 = 42.95 GB, 14.1% off (tolerance 10%)
EOF
}

t_fig_several_values() {
    fresh bare
    fig_page f <<'EOF'
Both: `320 KiB {= 327680, 5*2^16}`; the second is wrong: `320 KiB {= 327680, 2^19}`.
EOF
    fig_expect_fail <<'EOF'
content/f.md:4:59: error: value 2 of 2: quoted 320 KiB, but 327680, 2^19 = 512.00 KiB
EOF
}

# A figure read from a reproduced llama.cpp log (make measure's manifest and raw log): the
# popup and checks.json say "evidence: reproduced", a transcribed record's figure says
# "evidence: transcribed", and a quote the log contradicts fails at its line:col.
t_fig_reproduced_log() {
    fresh bare
    mkdir -p "$W/checks/measurements"
    cp "$ROOT/checks/measurements/llamacpp-reproduced.yaml" "$ROOT/checks/measurements/llamacpp-qwen2.5-7b.log" \
        "$ROOT/checks/measurements/llamacpp-m5pro-qwen2.5-7b.yaml" "$W/checks/measurements/"
    fig_page f <<'EOF'
```{lua}
meas, llamacpp = require "meas", require "llamacpp"
function here(n, t) return llamacpp.kv_bytes(meas.context("measurements/llamacpp-reproduced.yaml", "qwen2.5-7b", {n_ctx = n, type = t})) end
```
Here `119 MiB {= here(4096, "q8_0")}`, there `119 MiB {= meas.value("measurements/llamacpp-m5pro-qwen2.5-7b.yaml", "kv_by_type", "q8_0")}`.
EOF
    fig_expect_pass
    expect_grep site/checks.json '"provenance": "evidence: reproduced; source: make measure (tests/measure/measure.sh); machine: '
    expect_grep site/checks.json '"provenance": "evidence: transcribed; source: blog post fact-checking Avi Chawla'
    expect_grep site/f/index.html 'Measured at</span> evidence: reproduced; source: make measure'
    sed -i 's/Here `119 MiB/Here `120 MiB/' "$W/content/f.md"
    rm -rf "$W/site" # fig_expect_fail checks that a failed build writes no site
    fig_expect_fail <<'EOF'
content/f.md:8:7: error: quoted 120 MiB, but here(4096, "q8_0") = 119.00 MiB
EOF
}

t_fig_cite_unknown() {
    fresh bare
    # the sources page has an anchor per key, as cited figures link to them
    printf '{%% for _, s in ipairs(site.sources) do %%}<p id="{{ s.key }}">{{ s.title }}</p>{%% end %%}\n' >>"$W/templates/sources.html"
    fig_page f <<'EOF'
Known `3× {cite known}`, unknown `2× {cite nokey}`.
EOF
    fig_expect_fail <<'EOF'
content/f.md:4:35: error: cited source "nokey" is not in checks/sources.yaml
EOF
}

# A Lua error on the third line of a block whose first code line is 40.
t_fig_block_error_line() {
    fresh bare
    {
        printf -- '---\ntitle: Block\n---\n'
        local i
        for i in $(seq 4 38); do echo "Line $i."; done
        printf '```{lua}\nlocal a = 1\nlocal b = 2\nlocal c = nil + a\n```\n'
    } | page content/blk.md
    [ "$(sed -n 42p "$W/content/blk.md")" = "local c = nil + a" ] || fail "fixture: line 42 is not the failing line"
    fig_expect_fail <<'EOF'
content/blk.md:42: error: in {lua} block: attempt to perform arithmetic on a nil value
EOF
}

t_fig_block_syntax_error() {
    fresh bare
    fig_page blk <<'EOF'
Text.

```{lua}
local a = 1
local b = = 2
```
EOF
    fig_expect_fail <<'EOF'
content/blk.md:8: error: in {lua} block: unexpected symbol near '='
EOF
}

t_fig_runtime_error() {
    fresh bare
    fig_page f <<'EOF'
Broken: `1 GB {= nothing.size * 2}`.
EOF
    fig_expect_fail <<'EOF'
content/f.md:4:10: error: in figure: attempt to index a nil value (global 'nothing')
EOF
}

t_fig_string_value() {
    fresh bare
    fig_page f <<'EOF'
Text: `1 GB {= "one"}`.
EOF
    fig_expect_fail <<'EOF'
content/f.md:4:8: error: value 1 of `"one"` is a string, not a number
EOF
}

t_fig_inline_lua() {
    fresh bare
    fig_page f <<'EOF'
```{lua}
tokens = 4096
```

Tokens: `{lua} tokens * 2`, `{lua} string.format("%.1f", 1/3)`; shown: `40 GB \{= 1}`.
EOF
    fig_expect_pass
    expect_grep site/f/index.html '<p>Tokens: 8192, 0.3; shown: <code>40 GB {= 1}</code>.</p>'
}

# ---------- 4. the sandbox ----------

# lua_case CODE: a page whose {lua} block (first code line 5) is CODE
lua_case() {
    fresh bare
    if [ -n "${LUA_CASE_TIMEOUT:-}" ]; then
        sed -i "s/page_timeout: 1\$/page_timeout: $LUA_CASE_TIMEOUT/" "$W/site.yaml"
    fi
    printf -- '---\ntitle: Hostile\n---\n```{lua}\n%s\n```\n' "$1" | page content/x.md
    kv build "${@:2}"
    expect_rc 1
    expect_diags
    expect_summary "$SUMMARY_FAILED"
    expect_no_file site
    expect_no_staging
}

t_sandbox_io() {
    lua_case 'local f = io.open("/etc/passwd")' <<'EOF'
content/x.md:5:1: error: in {lua} block: attempt to index a nil value (global 'io')
EOF
}
t_sandbox_os_exit() {
    lua_case 'os.exit(3)' <<'EOF'
content/x.md:5:1: error: in {lua} block: attempt to index a nil value (global 'os')
EOF
}
t_sandbox_debug() {
    lua_case 'debug.getinfo(1)' <<'EOF'
content/x.md:5:1: error: in {lua} block: attempt to index a nil value (global 'debug')
EOF
}
t_sandbox_package() {
    lua_case 'package.loadlib("libc.so.6", "system")' <<'EOF'
content/x.md:5:1: error: in {lua} block: attempt to index a nil value (global 'package')
EOF
}
t_sandbox_dofile() {
    lua_case 'dofile("/etc/passwd")' <<'EOF'
content/x.md:5:1: error: in {lua} block: attempt to call a nil value (global 'dofile')
EOF
}
t_sandbox_loadfile() {
    lua_case 'loadfile("/etc/passwd")' <<'EOF'
content/x.md:5:1: error: in {lua} block: attempt to call a nil value (global 'loadfile')
EOF
}
t_sandbox_load_binary() {
    lua_case 'local f = load("\27Lua\84\0", "x", "b")' <<'EOF'
content/x.md:5:1: error: in {lua} block: load: binary chunks are not allowed
EOF
}
t_sandbox_load_binary_text_mode() {
    # a binary chunk passed as text is refused by the text-only loader
    fresh bare
    fig_page f <<'EOF'
`{lua} select(2, load("\27Lua\84\0"))`
EOF
    kv build
    expect_rc 0
    expect_grep site/f/index.html 'attempt to load a binary chunk (mode is'
}
t_sandbox_string_dump() {
    lua_case 'local s = string.dump(function() end)' <<'EOF'
content/x.md:5:1: error: in {lua} block: attempt to call a nil value (field 'dump')
EOF
}
t_sandbox_string_dump_method() {
    lua_case 'local s = ("").dump(function() end)' <<'EOF'
content/x.md:5:1: error: in {lua} block: attempt to call a nil value (field 'dump')
EOF
}
t_sandbox_require_parent() {
    lua_case 'require "../x"' <<'EOF'
content/x.md:5:1: error: in {lua} block: require "../x": module names are lower-case letters, digits and _ (a file checks/NAME.lua)
EOF
}
t_sandbox_require_os() {
    lua_case 'local os = require "os"' <<'EOF'
content/x.md:5:1: error: in {lua} block: require "os": checks/os.lua: no such file under checks/ nor in the checks library
EOF
}
t_sandbox_data_parent() {
    lua_case 'local t = data "../site.yaml"' <<'EOF'
content/x.md:5:1: error: in {lua} block: data "../site.yaml": not a plain relative path under checks/ (no "..", no absolute paths, no dotfiles)
EOF
}
t_sandbox_data_absolute() {
    lua_case 'local t = data "/etc/passwd"' <<'EOF'
content/x.md:5:1: error: in {lua} block: data "/etc/passwd": not a plain relative path under checks/ (no "..", no absolute paths, no dotfiles)
EOF
}
t_sandbox_collectgarbage() {
    lua_case 'collectgarbage()' <<'EOF'
content/x.md:5:1: error: in {lua} block: attempt to call a nil value (global 'collectgarbage')
EOF
}
t_sandbox_gc_metamethod() {
    lua_case 'setmetatable({}, {__gc = function() while true do end end})' <<'EOF'
content/x.md:5:1: error: in {lua} block: setmetatable: __gc metamethods are not allowed here
EOF
}
t_sandbox_infinite_loop() {
    lua_case 'while true do end' <<'EOF'
content/x.md:5:1: error: in {lua} block: instruction budget exceeded (limits.lua_instructions = 2000000)
EOF
}
t_sandbox_infinite_loop_pcall() {
    lua_case 'for i = 1, 100 do pcall(function() while true do end end) end' <<'EOF'
content/x.md:5:1: error: in {lua} block: instruction budget exceeded (limits.lua_instructions = 2000000)
EOF
}
t_sandbox_string_bomb() {
    lua_case 'local s = string.rep("x", 1e9)' <<'EOF'
content/x.md:5:1: error: in {lua} block: memory cap exceeded (limits.lua_memory = 16777216 bytes)
EOF
}
# The memory cap, not the page's deadline, must stop it: filling 16 MiB takes
# longer than the bare fixture's 1 s under ASan on a loaded machine, so this
# case runs with LUA_CASE_TIMEOUT seconds instead.
t_sandbox_table_bomb() {
    LUA_CASE_TIMEOUT=60 lua_case 'local t = {} for i = 1, 1e7 do t[i] = string.rep("x", 1000) .. i end' <<'EOF'
content/x.md:5:1: error: in {lua} block: memory cap exceeded (limits.lua_memory = 16777216 bytes)
EOF
}

# Globals, library changes and module changes of one page stay on that page
# (modules may also refuse changes: the pcall lets either design pass);
# -j 1 renders both pages in one worker, c before d.
t_sandbox_no_leak_between_pages() {
    fresh bare
    fig_page c <<'EOF'
```{lua}
leak = 42
-- the libraries are shared read-only views: changing one is an error
assert(not pcall(function() string.rep = nil end))
assert(not pcall(function() math.pi = 3 end))
pcall(function() require("util").answer = 0 end)
pcall(function() getmetatable("").__index = nil end)
pcall(function() getmetatable("").__index.rep = nil end)
```
EOF
    fig_page d <<'EOF'
Leak: `{lua} leak == nil and "clean" or "LEAK"`, `{lua} string.rep("ab", 2)`,
`{lua} ("cd"):rep(2)`, `{lua} math.pi > 3.14`, `{lua} require("util").answer`.
EOF
    kv build -j 1
    expect_rc 0
    expect_diags </dev/null
    expect_grep site/d/index.html '<p>Leak: clean, abab,'
    expect_grep site/d/index.html 'cdcd, true, 42.</p>'
}

# A pattern that backtracks for minutes runs in C, out of reach of the count
# hook: the watchdog stops it (limits.page_timeout = 1 s in the bare fixture),
# and the other pages' errors are still reported.
t_sandbox_page_timeout() {
    fresh bare
    fig_page a <<'EOF'
```{lua}
local s = (string.rep("a", 40) .. "b"):find(string.rep("a*", 30) .. "c")
```
EOF
    fig_page b <<'EOF'
Wrong: `1 GB {= 2}`.
EOF
    fig_page c <<'EOF'
Also wrong: `3 KiB {= 1}`.
EOF
    kv build -j 1
    expect_rc 1
    expect_diags <<'EOF'
content/a.md: error: rendering took longer than 1 s (limits.page_timeout): stopped
content/b.md:4:9: error: quoted 1 GB, but 2 = 0.00 GB
content/c.md:4:14: error: quoted 3 KiB, but 1 = 0.00 KiB
EOF
    expect_summary "$SUMMARY_FAILED"
    expect_no_staging
}

# ---------- 5. command line and configuration ----------

# usage_case ARGS...: exit 2, the message, then the usage
usage_case() {
    fresh bare
    kv "$@"
    expect_rc 2
    head -n 1 "$W.err" >"$W.got"
    printf '%s\n' "$USAGE_MSG" >"$W.want"
    show_diff "first stderr line" "$W.want" "$W.got"
    grep -q '^usage: kvsite build' "$W.err" || fail "no usage on stderr"
    expect_no_file site
}

t_cli_no_command() { USAGE_MSG='kvsite: no command' usage_case; }
t_cli_unknown_command() { USAGE_MSG='kvsite: unknown command "frobnicate"' usage_case frobnicate; }
t_cli_unknown_option() { USAGE_MSG='kvsite: unknown or incomplete option "--frob"' usage_case build --frob; }
t_cli_zero_jobs() { USAGE_MSG='kvsite: -j needs a number of workers from 1 to 256' usage_case build -j 0; }
t_cli_missing_project() {
    fresh bare
    kv build -C "$W/nowhere"
    expect_rc 2
    printf 'kvsite: error: project folder %s: No such file or directory\n' "$W/nowhere" >"$W.want"
    show_diff "stderr" "$W.want" "$W.err"
    expect_no_file nowhere
}
t_cli_check_has_no_output() { USAGE_MSG='kvsite: unknown or incomplete option "-o"' usage_case check -o out; }

t_cli_help_version() {
    fresh bare
    kv --help
    expect_rc 0
    grep -q '^usage: kvsite build \[-C DIR\] \[-o OUT\] \[--strict\] \[-j N\] \[--drafts\] \[--no-cache\]$' "$W.out" ||
        fail "--help does not print the usage on stdout"
    kv build --help
    expect_rc 0
    grep -q '^usage: kvsite build' "$W.out" || fail "build --help does not print the usage"
    kv --version
    expect_rc 0
    grep -Eq '^kvsite [0-9]+\.[0-9]+\.[0-9]+$' "$W.out" || fail "--version prints \"$(head -n 1 "$W.out")\""
    expect_no_file site
}

# config_case: site.yaml from stdin, the expected diagnostics in $WANT
config_case() {
    fresh bare
    cat >"$W/site.yaml"
    kv build
    expect_rc 2
    expect_diags <<<"$WANT" # not a pipe: expect_diags must fail this shell, not a subshell
    expect_summary "$SUMMARY_CONFIG"
    expect_no_file site
    expect_no_staging
}

t_config_unknown_key() {
    WANT='site.yaml:2:1: error: unknown key "colour"; known keys: title, base_url, language, description, author, theme, params, content, markdown, figures, build, feed, paginate, paginate_tags, paginate_sources, search, limits
site.yaml:4:3: error: unknown key "page_byte" in limits; known keys: page_bytes, front_matter_bytes, data_bytes, template_bytes, output_bytes, files, page_tags, depth, lua_instructions, lua_memory, page_timeout, build_timeout, worker_memory' config_case <<'EOF'
title: X
colour: red
limits:
  page_byte: 5
EOF
}

t_config_wrong_type() {
    WANT='site.yaml:3:3: error: markdown.unsafe must be true or false, not a string
site.yaml:5:3: error: build.jobs must be an integer, not a string
site.yaml:6:1: error: feed must be a map, not an integer' config_case <<'EOF'
title: X
markdown:
  unsafe: "yes"
build:
  jobs: many
feed: 5
EOF
}

t_config_bad_yaml() {
    WANT='site.yaml:2:6: error: invalid YAML: mapping values are not allowed in this context' config_case <<'EOF'
title: X
  bad: indent
EOF
}

t_cli_github_actions() {
    fresh bare
    fig_page f <<'EOF'
It needs 40 GB, `1 GB {= 2}`.
EOF
    GITHUB_ACTIONS=true kv build
    expect_rc 1
    expect_diags <<'EOF'
content/f.md:4:10: warning: unverified figure "40 GB": quote it as a figure (`40 GB {= EXPR}`) or cite it (`40 GB {cite KEY}`)
content/f.md:4:18: error: quoted 1 GB, but 2 = 0.00 GB
::warning file=content/f.md,line=4,col=10::unverified figure "40 GB": quote it as a figure (`40 GB {= EXPR}`) or cite it (`40 GB {cite KEY}`)
::error file=content/f.md,line=4,col=18::quoted 1 GB, but 2 = 0.00 GB
EOF
    expect_summary "$SUMMARY_FAILED"
    # without the variable: no workflow commands
    kv build
    grep -q '^::' "$W.err" && fail "workflow commands printed without GITHUB_ACTIONS=true"
}

t_cli_render() {
    fresh bare
    printf '| a | b |\n|---|---|\n| 1 | 2 |\n\nHi <b>x</b>.\n\n<div>y</div>\n' >"$W.md"
    KV_STDIN=$W.md kv render
    expect_rc 0
    cat >"$W.want" <<'EOF'
<table>
<thead>
<tr>
<th>a</th>
<th>b</th>
</tr>
</thead>
<tbody>
<tr>
<td>1</td>
<td>2</td>
</tr>
</tbody>
</table>
<p>Hi <!-- raw HTML omitted -->x<!-- raw HTML omitted -->.</p>
<!-- raw HTML omitted -->
EOF
    show_diff "render output" "$W.want" "$W.out"
    KV_STDIN=$W.md kv render --unsafe
    expect_rc 0
    grep -qxF '<p>Hi <b>x</b>.</p>' "$W.out" || fail "render --unsafe dropped the inline HTML"
    grep -qxF '<div>y</div>' "$W.out" || fail "render --unsafe dropped the HTML block"
    expect_no_file site
}

# ---------- the no-change fast path ----------

# A second build of an unchanged tree does nothing and says so; any change to
# an input or to the output rebuilds; --no-cache always builds.
t_cache_up_to_date() {
    fresh good
    kv build
    expect_rc 0
    hashes "$W/site" >"$W.h0"
    kv build
    expect_rc 0
    tail -n 1 "$W.err" | grep -q '^kvsite: up to date: ' || fail "second build did not say up to date: $(tail -n 1 "$W.err")"
    kv build --no-cache
    expect_rc 0
    tail -n 1 "$W.err" | grep -q '^kvsite: built ' || fail "--no-cache did not build"
    rm -f "$W/site/feed.xml"
    kv build
    expect_rc 0
    [ -f "$W/site/feed.xml" ] || fail "a file removed from the output was not rebuilt"
    touch "$W/templates/page.html"
    kv build
    tail -n 1 "$W.err" | grep -q '^kvsite: built ' || fail "a touched template did not rebuild"
    hashes "$W/site" >"$W.h1"
    show_diff "sha256 of site/ after the rebuilds" "$W.h0" "$W.h1"
}

# After a series of edits, renames and deletions, the output equals a full
# build of the same tree in a fresh folder.
t_cache_incremental_equals_full() {
    fresh good
    local i
    for i in 1 2 3; do
        printf -- '---\ntitle: Extra %s\ndate: 2026-10-0%s\n---\nPage %s of a series that is edited, renamed and deleted.\n' \
            "$i" "$i" "$i" | page "content/extra/p$i.md"
    done
    kv build
    expect_rc 0
    printf '\nOne more paragraph.\n' >>"$W/content/extra/p1.md"
    kv build
    expect_rc 0
    mv "$W/content/extra/p2.md" "$W/content/extra/renamed.md"
    kv build
    expect_rc 0
    rm "$W/content/extra/p3.md"
    kv build
    expect_rc 0
    kv build
    expect_rc 0
    hashes "$W/site" >"$W.inc"
    [ -d "$W/site/extra/p3" ] && fail "a deleted page survived"
    [ -d "$W/site/extra/p2" ] && fail "a renamed page survived under its old name"
    rm -rf "$W/site" "$W/.kvsite/site.prev" "$W/.kvsite/site.stamp"
    kv build --no-cache -o full
    expect_rc 0
    hashes "$W/full" >"$W.full"
    show_diff "incremental output against a full build" "$W.full" "$W.inc"
}

# Past 512 jobs, an incremental build checks the cached records in two
# threads (incr_reuse_jobs), decoding their figures and links into the figure
# store from both: 700 pages with a figure and a link each, two edited (one
# figure changed), and the output equals a full build's.
t_incremental_many_pages_equals_full() {
    fresh good
    local i
    mkdir -p "$W/content/many"
    for ((i = 1; i <= 700; i++)); do
        printf -- '---\ntitle: Many %s\n---\n\nPage %s has `%s {= %s}` and [a neighbour](/many/p%s/).\n' \
            "$i" "$i" "$i" "$i" "$((i % 700 + 1))" >"$W/content/many/p$i.md"
    done
    kv build
    expect_rc 0
    sed -i 's/`7 {= 7}`/`14 {= 2 * 7}`/' "$W/content/many/p7.md"
    printf '\nEdited.\n' >>"$W/content/many/p300.md"
    kv build
    expect_rc 0
    grep -q "unchanged since the last build" "$W.err" || fail "not incremental: $(tail -n 1 "$W.err")"
    hashes "$W/site" >"$W.inc"
    kv build --no-cache -o full
    expect_rc 0
    hashes "$W/full" >"$W.full"
    show_diff "incremental output against a full build" "$W.full" "$W.inc"
}

# A full build reuses the staging folder (the output before last): files and
# empty folders that the build does not produce are removed from it, so
# nothing stale reaches the output.
t_full_build_sweeps_staging() {
    fresh good
    kv build --no-cache
    expect_rc 0
    listing "$W/site" >"$W.l0"
    kv build --no-cache
    expect_rc 0
    mkdir -p "$W/.kvsite/site.prev/old" "$W/.kvsite/site.prev/empty/deeper" "$W/.kvsite/site.prev/notes/gone"
    printf 'stale\n' >"$W/.kvsite/site.prev/old/x.html"
    printf 'stale\n' >"$W/.kvsite/site.prev/notes/gone/index.html"
    kv build --no-cache
    expect_rc 0
    listing "$W/site" >"$W.l1"
    show_diff "listing of site/ after a full build over a stale staging folder" "$W.l0" "$W.l1"
}

# The walks remember the folders of both output folders (.kvsite/site.dirs,
# site.prev.dirs): a file, a folder or a link put since into a folder they
# remember is found all the same (the folder's times moved), swept or
# refused, and a memo that is damaged or swapped for the other folder's
# costs nothing but reads.
t_walk_memos_see_changes() {
    fresh good
    kv build --no-cache
    expect_rc 0
    listing "$W/site" >"$W.l0"
    sleep 0.3 # older than the racy line: remembered
    kv build --no-cache
    kv build --no-cache
    expect_rc 0
    [ -s "$W/.kvsite/site.dirs" ] && [ -s "$W/.kvsite/site.prev.dirs" ] ||
        fail "the walks left no memos"
    local deep
    deep=$(cd "$W/.kvsite/site.prev" && find . -mindepth 2 -name index.html | LC_ALL=C sort | head -n 1)
    deep=$(dirname "${deep#./}")
    printf 'stale\n' >"$W/.kvsite/site.prev/$deep/stale.html"
    mkdir "$W/.kvsite/site.prev/$deep/sub"
    printf 'stale\n' >"$W/.kvsite/site.prev/$deep/sub/x.html"
    kv build --no-cache
    expect_rc 0
    listing "$W/site" >"$W.l1"
    show_diff "listing of site/ after files were put into a remembered staging folder" "$W.l0" "$W.l1"
    # the old output is the staging folder now, remembered by the walk of
    # the output: a link put into one of its folders empties it
    mkdir -p "$W.canary"
    ln -s "$W.canary" "$W/.kvsite/site.prev/$deep/planted"
    kv build --no-cache
    expect_rc 0
    [ -z "$(ls -A "$W.canary")" ] || fail "files were written through a link planted in the staging folder"
    listing "$W/site" >"$W.l2"
    show_diff "listing of site/ after a link was planted in a remembered folder" "$W.l0" "$W.l2"
    # swapped and damaged memos
    mv "$W/.kvsite/site.dirs" "$W.d" && mv "$W/.kvsite/site.prev.dirs" "$W/.kvsite/site.dirs" &&
        mv "$W.d" "$W/.kvsite/site.prev.dirs"
    printf 'stale\n' >"$W/.kvsite/site.prev/$deep/stale.html"
    kv build --no-cache
    expect_rc 0
    printf 'x' | dd of="$W/.kvsite/site.dirs" bs=1 seek=40 conv=notrunc status=none
    printf 'stale\n' >"$W/.kvsite/site.prev/$deep/stale.html"
    kv build --no-cache
    expect_rc 0
    listing "$W/site" >"$W.l3"
    show_diff "listing of site/ after swapped and damaged memos" "$W.l0" "$W.l3"
}

# One worker keeps a figure's compiled expression for the next page that
# writes the same text: each page still evaluates it in its own environment,
# and an error or a print in it is reported at that page's own place.
t_figures_same_expression_on_many_pages() {
    good_built || return
    local i
    for i in 1 2 3; do
        printf -- '---\ntitle: Same %s\n---\n```{lua}\nx = %s\n```\n\nIt is `%s {= x}` here.\n' \
            "$i" "$i" "$i" | page "content/notes/same-$i.md"
    done
    printf -- '---\ntitle: Bad 1\n---\nFirst `1 {= nosuch(1)}`.\n' | page content/notes/bad-1.md
    printf -- '---\ntitle: Bad 2\n---\n\n\nThen `1 {= nosuch(1)}`.\n' | page content/notes/bad-2.md
    printf -- '---\ntitle: Print 1\n---\n`1 {= print("seen") or 1}`\n' | page content/notes/print-1.md
    printf -- '---\ntitle: Print 2\n---\n\n`1 {= print("seen") or 1}`\n' | page content/notes/print-2.md
    kv build -j 1
    expect_failed_build <<'EOF'
content/notes/bad-1.md:4:8: error: in figure: attempt to call a nil value (global 'nosuch')
content/notes/bad-2.md:6:7: error: in figure: attempt to call a nil value (global 'nosuch')
content/notes/print-1.md:4: note: print: seen
content/notes/print-2.md:5: note: print: seen
EOF
}

# A figure in a template is a read-only object: its fields by name or with
# pairs() in a fixed order; setting one is an error at the template's line.
t_figure_objects_in_templates() {
    good_built || return
    printf -- '---\ntitle: Objects\ntemplate: figs.html\n---\nIt is `4 {= 2+2}`.\n' | page content/notes/objects.md
    cat >"$W/templates/figs.html" <<'EOF'
{% local f = page.figures[1] %}<p>{{ f.quote }}|{{ f.expr }}|{{ f.tier }}|{{ f.status }}|{{ f.line }}|{{ tostring(f.nosuch) }}</p>
<p>{% for k, v in pairs(f) do %}{{ k }};{% end %}</p>
EOF
    kv build
    expect_rc 0
    expect_grep site/notes/objects/index.html "<p>4|2+2|computed|pass|5|nil</p>"
    expect_grep site/notes/objects/index.html "<p>quote;expr;mode;tier;status;ok;value;detail;provenance;anchor;src;line;col;</p>"
    printf '{%% page.figures[1].quote = "5" %%}\n' >"$W/templates/figs.html"
    kv build
    expect_rc 1
    grep -q '^templates/figs.html:1: error: .*a figure is read-only: cannot set quote' "$W.err" ||
        fail "setting a figure's field: $(grep error "$W.err" | head -n 2)"
}

# A page in a list is a read-only object: fields by name, the same tags and
# params table on every read, pairs() in a fixed order; setting is an error.
t_page_objects_in_lists() {
    good_built || return
    printf -- '---\ntitle: Lists\ntemplate: list.html\n---\nBody.\n' | page content/notes/lists.md
    cat >"$W/templates/list.html" <<'EOF'
{% for _, p in ipairs(site.pages) do %}{% if p.title == "Week 1" then %}<p>{{ p.title }}|{{ p.url }}|{{ p.kind }}|{{ p.tags[1].name }}|{{ tostring(p.tags == p.tags) }}|{{ tostring(p.params == p.params) }}|{{ p.params.title }}|{{ tostring(p.nosuch) }}</p>
<p>{% for k in pairs(p) do %}{{ k }};{% end %}</p>{% end %}{% end %}
EOF
    kv build
    expect_rc 0
    expect_grep site/notes/lists/index.html "<p>Week 1|/notes/week-1/|page|kv-cache|true|true|Week 1|nil</p>"
    expect_grep site/notes/lists/index.html "<p>title;date;section;src;kind;url;permalink;path;weight;draft;tags;params;</p>"
    printf '{%% site.pages[1].title = "x" %%}\n' >"$W/templates/list.html"
    kv build
    expect_rc 1
    grep -q '^templates/list.html:1: error: .*a page in a list is read-only: cannot set title' "$W.err" ||
        fail "setting a listed page's field: $(grep error "$W.err" | head -n 2)"
}

# With templates/checks-section.html the report is one page per top-level
# section; checks/ keeps home's and the root pages' figures and lists the
# sections with their totals. Figures link to the page that lists them, and
# incremental builds re-render only the report pages whose figures changed.
t_report_by_section() {
    good_built || return
    cat >"$W/templates/checks.html" <<'EOF'
{{ include "partials/head.html" }}
<p>index {{ report.figures.total }} of {{ site.figures.total }}</p>
{% for _, s in ipairs(report.sections) do %}<p>section {{ s.title }}|{{ s.url }}|{{ s.page_url }}|{{ s.total }}|{{ s.computed }}|{{ s.measured }}|{{ s.cited }}|{{ s.failed }}</p>
{% end %}{% for _, f in ipairs(report.figures.list) do %}<p id="{{ f.anchor }}">root {{ f.src }}:{{ f.line }} {{ f.quote }}</p>
{% end %}
EOF
    cat >"$W/templates/checks-section.html" <<'EOF'
{{ include "partials/head.html" }}
<h1>{{ page.title }}|{{ page.url }}|{{ report.section.title }}|{{ #report.sections }}</h1>
{% for _, f in ipairs(report.figures.list) do %}<p id="{{ f.anchor }}">{{ f.src }}:{{ f.line }} {{ f.quote }}</p>
{% end %}
EOF
    printf -- '---\ntitle: About\n---\nTwo and two make `4 {= 2+2}`.\n' | page content/about.md
    printf -- '---\ntitle: Deep\n---\nThree times three is `9 {= 3*3}`.\n' | page content/notes/deep/nine.md
    kv build
    expect_rc 0
    expect_grep site/checks/index.html "<p>index 1 of 13</p>"
    expect_grep site/checks/index.html "<p>section Articles|/checks/articles/|/articles/|10|8|1|1|0</p>"
    expect_grep site/checks/index.html "<p>section Notes|/checks/notes/|/notes/|2|2|0|0|0</p>"
    expect_grep site/checks/index.html "root content/about.md:4 4</p>"
    expect_no_grep site/checks/index.html "kv-cache.md"
    expect_grep site/checks/articles/index.html "<h1>Articles|/checks/articles/|Articles|0</h1>"
    expect_grep site/checks/articles/index.html "content/articles/kv-cache.md:"
    expect_no_grep site/checks/articles/index.html "week-1.md"
    expect_grep site/checks/notes/index.html "content/notes/week-1.md:"
    expect_grep site/checks/notes/index.html "content/notes/deep/nine.md:4 9</p>"
    expect_grep site/notes/deep/nine/index.html 'href="/checks/notes/#notes-deep-nine-1"'
    expect_grep site/about/index.html 'href="/checks/#about-1"'
    expect_grep site/articles/kv-cache/index.html 'href="/checks/articles/#articles-kv-cache-1"'
    expect_grep site/checks.json '"file": "content/notes/deep/nine.md"'
    expect_grep site/sitemap.xml "/checks/notes/</loc>"
    expect_no_grep site/sitemap.xml "checks.json"
    same_as_full split
    # a figure of one section: its page, its report page, the index (totals)
    # and checks.json; the other section's report stays
    sed -i 's/`9 {= 3\*3}`/`10 {= 3*3+1}`/' "$W/content/notes/deep/nine.md"
    kv build
    expect_rc 0
    rendered 4
    expect_grep site/checks/notes/index.html "content/notes/deep/nine.md:4 10</p>"
    same_as_full edit
    # back to one report: every page links to checks/ again
    rm "$W/templates/checks-section.html"
    kv build
    expect_rc 0
    expect_grep site/notes/deep/nine/index.html 'href="/checks/#notes-deep-nine-1"'
    [ -e "$W/site/checks/notes/index.html" ] && fail "a report section page outlived its template"
    same_as_full one
}

# ---------- incremental builds ----------

# same_as_full STEP: site/ equals a full build (--no-cache) of the same tree
# in another folder, file for file, and the listing of folders too
same_as_full() {
    local out=$TMP/full-$NCOPY-$1
    rm -rf "$out"
    (cd "$W" && timeout -k 5 60 "$KVSITE" build --no-cache -o "$out") >/dev/null 2>&1 ||
        { fail "step $1: the full build failed"; return; }
    listing "$W/site" >"$W.inc-$1"
    listing "$out" >"$W.full-$1"
    show_diff "step $1: incremental output against a full build" "$W.full-$1" "$W.inc-$1"
}

# rendered N: the last build rendered N jobs and took the rest from the cache
rendered() {
    tail -n 1 "$W.err" | grep -q "in [0-9.]* s ($1 rendered, [0-9]* unchanged since the last build)" ||
        fail "expected $1 rendered: $(tail -n 1 "$W.err")"
}

# Each page is rendered again when one of its inputs changes (its source, a
# template or include, a checks/ module or data file, the records it lists,
# its output file) and only then; after every step the output equals a full
# build of the same tree.
t_incremental_renders_what_changed() {
    fresh good
    kv build
    expect_rc 0
    # a paragraph added at the end of a page: that page alone
    printf '\nOne more paragraph.\n' >>"$W/content/notes/week-1.md"
    kv build
    expect_rc 0
    rendered 1
    expect_grep site/notes/week-1/index.html "One more paragraph."
    same_as_full body
    # a data file a checks/ module reads: the article that reads it, then
    # everything that lists its figures (the report, home)
    sed -i 's/^machine: none$/machine: bench-2/' "$W/checks/measurements/run.yaml"
    kv build
    expect_rc 0
    tail -n 1 "$W.err" | grep -q '(0 rendered' && fail "a changed data file rendered nothing"
    expect_grep site/checks.json "bench-2"
    expect_grep site/articles/kv-cache/index.html "bench-2"
    same_as_full data
    # an include every page uses: all of them (checks.json, made without
    # templates, stays)
    printf '<!-- edited -->\n' >>"$W/templates/partials/head.html"
    kv build
    expect_rc 0
    tail -n 1 "$W.err" | grep -q ', 1 unchanged' || fail "an edited include left pages alone: $(tail -n 1 "$W.err")"
    same_as_full include
    # an output file removed by hand comes back
    rm "$W/site/notes/week-1/index.html"
    kv build
    expect_rc 0
    rendered 1
    expect_file site/notes/week-1/index.html
    same_as_full tampered
    # a template asset added, then removed: it leaves the output too
    printf 'extra\n' >"$W/templates/assets/extra.txt"
    kv build
    expect_rc 0
    expect_file site/assets/extra.txt
    rm "$W/templates/assets/extra.txt"
    kv build
    expect_rc 0
    expect_no_file site/assets/extra.txt
    same_as_full asset
    # a wrong figure fails the build and leaves the output as it was
    hashes "$W/site" >"$W.before"
    printf '\nWrong: `3 {= 1+1}`.\n' >>"$W/content/notes/week-1.md"
    kv build
    expect_rc 1
    hashes "$W/site" >"$W.after"
    show_diff "output after a failed incremental build" "$W.before" "$W.after"
    sed -i 's/^Wrong: .*$/Right: `2 {= 1+1}`./' "$W/content/notes/week-1.md"
    kv build
    expect_rc 0
    expect_grep site/notes/week-1/index.html "Right:"
    same_as_full fixed
    # front matter: the index changed, so every page is rendered
    sed -i 's/^title: Week 1$/title: Week one/' "$W/content/notes/week-1.md"
    kv build
    expect_rc 0
    tail -n 1 "$W.err" | grep -q 'rendered' && fail "a front matter edit was built incrementally"
    expect_grep site/notes/index.html "Week one"
    same_as_full front
    # a page added, a page renamed, a page deleted
    printf -- '---\ntitle: Week 2\ndate: 2026-01-22\n---\nNotes of the second meeting.\n' |
        page content/notes/week-2.md
    kv build
    expect_rc 0
    mv "$W/content/notes/week-2.md" "$W/content/notes/week-two.md"
    kv build
    expect_rc 0
    expect_no_file site/notes/week-2
    same_as_full renamed
    rm "$W/content/notes/week-two.md"
    kv build
    expect_rc 0
    expect_no_file site/notes/week-two
    same_as_full deleted
    # nothing changed: nothing rendered, the no-change check answers
    kv build
    tail -n 1 "$W.err" | grep -q '^kvsite: up to date: ' || fail "no-change build: $(tail -n 1 "$W.err")"
}

# A page's template inputs are what its own render looked up, and what the
# include_cached outputs it reused were made from; not every template its
# worker looked up before it (each page then listed every section's missing
# templates/<section>/page.html: quadratic in the sections, and a template
# added for one section rendered the others' pages again). Bundled theme.
t_incremental_template_inputs_per_page() {
    fresh good
    rm -rf "$W/templates"
    printf 'theme: default\n' >>"$W/site.yaml"
    local i f
    for i in 1 2 3; do
        printf -- '---\ntitle: Note %s\ndate: 2026-02-0%s\n---\nNote %s.\n' "$i" "$i" "$i" |
            page "content/notes/n$i.md"
        printf -- '---\ntitle: Article %s\ndate: 2026-03-0%s\n---\nArticle %s.\n' "$i" "$i" "$i" |
            page "content/articles/a$i.md"
    done
    # one worker: the notes come after the articles it looked up templates for
    kv build -j 1
    expect_rc 0
    # a page template for articles: their pages again, no note
    printf '{{ include "partials/head.html" }}<main id="main"><!-- articles page -->{{{ page.content }}}</main>\n{{ include "partials/footer.html" }}' |
        page templates/articles/page.html
    KVSITE_TRACE=1 kv build -j 1
    expect_rc 0
    for f in kv-cache a1 a2 a3; do
        grep -q "trace: rendering content/articles/$f.md" "$W.err" ||
            fail "articles/$f.md not rendered again"
        expect_grep "site/articles/$f/index.html" '<!-- articles page -->'
    done
    grep -q 'trace: rendering content/notes/' "$W.err" &&
        fail "a template for articles rendered $(grep -c 'rendering content/notes/' "$W.err") notes again"
    same_as_full articles-template
    rm "$W/templates/articles/page.html"
    KVSITE_TRACE=1 kv build -j 1
    expect_rc 0
    grep -q 'trace: rendering content/articles/a2.md' "$W.err" || fail "articles/a2.md not rendered again"
    grep -q 'trace: rendering content/notes/' "$W.err" && fail "the template's removal rendered notes"
    expect_no_grep site/articles/a2/index.html '<!-- articles page -->'
    same_as_full articles-template-gone
    # the theme's header is rendered once per place (include_cached) and
    # reused: the partial it is made of, overridden, renders every page that
    # reused it
    sed 's|<header class="site-header">|<header class="site-header" data-edited="1">|' \
        "$ROOT/share/theme/partials/site-header.html" | page templates/partials/site-header.html
    kv build -j 2
    expect_rc 0
    for f in notes/n1 notes/n3 articles/a1 articles/a3 articles/kv-cache; do
        expect_grep "site/$f/index.html" 'data-edited="1"'
    done
    same_as_full header
}

# A page taken from the cache warns again, as it did when it was rendered:
# an incremental build reports what a full one does.
t_incremental_keeps_warnings() {
    fresh good
    printf -- '---\ntitle: Warn\n---\nThe cache takes 40 GB here.\n' | page content/notes/warn.md
    kv build
    expect_rc 0
    grep -q '^content/notes/warn.md:4:17: warning: unverified figure "40 GB"' "$W.err" ||
        fail "first build: no warning"
    printf '\nMore.\n' >>"$W/content/notes/week-1.md"
    kv build
    expect_rc 0
    rendered 1
    grep -q '^content/notes/warn.md:4:17: warning: unverified figure "40 GB"' "$W.err" ||
        fail "the warning of a page taken from the cache was lost: $(cat "$W.err")"
    tail -n 1 "$W.err" | grep -q ', 1 warning, ' || fail "summary: $(tail -n 1 "$W.err")"
}

# After a full build, a page that writes no file (the sources page of a site
# without checks/sources.yaml) is taken from the cache like any other: an
# input no page reads renders nothing.
t_incremental_after_full_build() {
    fresh bare
    rm -f "$W/checks/sources.yaml"
    kv build --no-cache
    expect_rc 0
    printf 'unused\n' >"$W/checks/unused.txt"
    kv build
    expect_rc 0
    rendered 0
}

# --no-cache renders every page even with a usable cache, and the next build
# uses the cache it wrote.
t_incremental_no_cache() {
    fresh good
    kv build
    printf '\nMore.\n' >>"$W/content/notes/week-1.md"
    kv build --no-cache
    expect_rc 0
    tail -n 1 "$W.err" | grep -q 'rendered' && fail "--no-cache used the cache: $(tail -n 1 "$W.err")"
    # a file no page reads: nothing to render after a full build either
    printf 'unused\n' >"$W/checks/unused.txt"
    kv build
    expect_rc 0
    rendered 0
    printf '\nMore again.\n' >>"$W/content/notes/week-1.md"
    kv build
    expect_rc 0
    rendered 1
    # a damaged cache is ignored: a full build, no error
    printf 'garbage' >"$W/.kvsite/site.cache"
    printf '\nAnd again.\n' >>"$W/content/notes/week-1.md"
    kv build
    expect_rc 0
    tail -n 1 "$W.err" | grep -q 'rendered' && fail "a damaged cache was used: $(tail -n 1 "$W.err")"
    same_as_full damaged
}

# A cache whose bytes were changed in place (a title, a figure's expression) is never
# believed: every record and the rest of the file carry checksums (issue 14).
t_incremental_cache_cannot_lie() {
    local what from to
    for what in "title:KV cache sizes:KV cache LIES!" "expr:kv_bytes(131072):kv_bytes(131073)" "front:Week 1:Week 9"; do
        IFS=: read -r _ from to <<<"$what"
        fresh good
        kv build
        expect_rc 0
        python3 - "$W/.kvsite/site.cache" "$from" "$to" <<'EOF' || fail "cannot patch the cache"
import sys
p, a, b = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
data = open(p, "rb").read()
assert a in data and len(a) == len(b), (a, b)
open(p, "wb").write(data.replace(a, b))
EOF
        printf '\nAn unrelated edit.\n' >>"$W/content/articles/_index.md"
        kv build
        expect_rc 0
        same_as_full "lie-${what%%:*}"
        grep -rq "${to}" "$W/site" && fail "${what%%:*}: the patched bytes were published"
        # and they stay out in the build after
        printf '\nAnother.\n' >>"$W/content/articles/_index.md"
        kv build
        expect_rc 0
        same_as_full "lie-${what%%:*}-later"
    done
}

# pairs() and next() visit keys in one order in every build, whatever Lua's hash seed
# (issue 14.7): a page that concatenates a table in pairs order publishes the same bytes.
t_deterministic_pairs() {
    fresh good
    page content/notes/order.md <<'EOF'
---
title: Order
tags: [memory]
---

```{lua}
t = {}
for i = 1, 60 do t["key" .. (i * 7919 % 61)] = i end
t[3], t[1.5], t[true] = "three", "one and a half", "yes"
local parts = {}
for k, v in pairs(t) do parts[#parts + 1] = tostring(k) .. "=" .. tostring(v) end
order = table.concat(parts, ",")
local k, n = next(t), 0
while k ~= nil do n = n + 1; k = next(t, k) end
count = n
```

Order: `{lua} order`; count: `{lua} count`.
EOF
    local i first="" h
    for i in 1 2 3 4 5; do
        kv build --no-cache
        expect_rc 0
        h=$(sha256sum <"$W/site/notes/order/index.html")
        [ -z "$first" ] && first=$h
        [ "$h" = "$first" ] || { fail "build $i published other bytes"; break; }
    done
    expect_grep site/notes/order/index.html "Order: 1.5=one and a half,3=three,key1=11,key10=49,"
    expect_grep site/notes/order/index.html ",true=yes"
    expect_grep site/notes/order/index.html "count: 63"
}

# Workers never outlive their build (issue 22.5): the parent is killed while a worker is
# stuck in C (a backtracking pattern), and no worker is left running.
t_workers_die_with_the_parent() {
    fresh good
    printf 'limits:\n  page_timeout: 600\n' >>"$W/site.yaml"
    page content/notes/stuck.md <<'EOF'
---
title: Stuck
---

`{lua} (("a"):rep(40)):find(("a*"):rep(40) .. "b")`
EOF
    (cd "$W" && exec "$KVSITE" build --no-cache -j 2) >/dev/null 2>&1 &
    local parent=$! i
    for i in $(seq 50); do
        pgrep -P "$parent" >/dev/null && break
        sleep 0.1
    done
    local kids
    kids=$(pgrep -P "$parent" | tr '\n' ' ')
    [ -n "$kids" ] || { fail "no worker started"; kill -9 "$parent"; return; }
    sleep 0.5
    kill -TERM "$parent"
    wait "$parent" 2>/dev/null
    sleep 0.5
    local left=""
    # a zombie has ended (nothing may reap it where PID 1 does not)
    for i in $kids; do
        case $(ps -o stat= -p "$i" 2>/dev/null) in ""|Z*) ;; *) left+=" $i" ;; esac
    done
    [ -z "$left" ] || { fail "workers outlived the parent:$left"; kill -9 $left 2>/dev/null; }
}

# limits.build_timeout bounds a whole build: pages that each stay under the page timeout
# but together run past it fail, located, and the previous output stays.
t_build_timeout() {
    fresh good
    printf 'limits:\n  page_timeout: 30\n  build_timeout: 1\n' >>"$W/site.yaml"
    local i
    for i in 1 2 3 4 5 6; do
        printf -- '---\ntitle: Slow %s\n---\n\n`{lua} (("a"):rep(24)):find(("a*"):rep(24) .. "b")`\n' "$i" \
            >"$W/content/notes/slow$i.md"
    done
    local t0=$SECONDS
    kv build -j 2
    expect_rc 1
    [ $((SECONDS - t0)) -lt 20 ] || fail "the build ran $((SECONDS - t0)) s"
    grep -q "the build took longer than 1 s (limits.build_timeout)" "$W.err" ||
        fail "no build_timeout error: $(tail -n 3 "$W.err")"
    expect_no_file site
}

# Tags per page are capped (limits.page_tags): tag pages list their pages with all their
# tags, so a page with thousands of tags made output quadratic in them (issue 22.5).
t_page_tags_capped() {
    fresh good
    local tags
    tags=$(seq -f 't%g' 1 65 | paste -sd, -)
    printf -- '---\ntitle: Many\ntags: [%s]\n---\n\nText.\n' "$tags" >"$W/content/notes/many.md"
    kv build
    expect_rc 1
    expect_diags <<'EOF'
content/notes/many.md:3:7: error: 65 tags, more than limits.page_tags (64)
EOF
    printf 'limits:\n  page_tags: 65\n' >>"$W/site.yaml"
    kv build
    expect_rc 0
    expect_file site/tags/t65/index.html
}

# No page can change what another page or a template sees (issue 22.1): the library and
# module tables are reachable by no path (pairs, next, rawget, rawset, metatables), and
# templates call builtins that no page global can stand in for.
t_attack_forge_across_pages() {
    fresh good
    page content/notes/a-attack.md <<'EOF'
---
title: Attack
---

```{lua}
local tries = {}
local function try(name, f) tries[#tries + 1] = name .. "=" .. tostring((pcall(f))) end
local _, M = pairs(math)
try("pairs-state", function() M.floor = function() return 42 end end)
local it = pairs(math)
try("pairs-iter", function() local k, v = it(M, nil); assert(type(M) == "table"); rawset(M, "floor", function() return 42 end) end)
try("next", function() local k = next(math); assert(k == nil) end)
try("rawget", function() assert(rawget(math, "floor") == nil) end)
try("rawset", function() rawset(math, "floor", function() return 42 end) end)
try("metatable", function() local mt = getmetatable(math); mt.__index.floor = function() return 42 end end)
try("string", function() local _, S = pairs(string); S.rep = function() return "x" end end)
try("strmeta", function() getmetatable("").__index.rep = function() return "x" end end)
try("module", function() local fx = require "fx"; local _, F = pairs(fx); F.run_bytes = function() return 1 end end)
report = table.concat(tries, " ")
```

Tries: `{lua} report`.
EOF
    page content/notes/b-victim.md <<'EOF'
---
title: Victim
---

Floor: `3 {= math.floor(3.7)}`; rep: `{lua} string.rep("ab", 2)`; run: `{lua} require("fx").run_bytes()`.
EOF
    kv build -j 1
    expect_rc 0
    expect_grep site/notes/b-victim/index.html "rep: abab"
    expect_no_grep site/notes/b-victim/index.html "run: 1<"
    # the figure 42 {= math.floor(3.7)} must fail on a later page of the same worker
    printf '\nForged: `42 {= math.floor(3.7)}`.\n' >>"$W/content/notes/b-victim.md"
    kv build -j 1
    expect_rc 1
    grep -q "b-victim.md:.*quoted 42, but math.floor(3.7) = 3" "$W.err" ||
        fail "the forged figure was not caught: $(grep -c error "$W.err") errors"
}

t_attack_template_builtins() {
    fresh good
    page content/notes/shadow.md <<'EOF'
---
title: Shadow
tags: [memory]
---

```{lua}
ipairs = function() return function(_, i) if not i then return 1, {url = "javascript:evil()", name = "evil"} end end, nil, nil end
tostring = function() return "evil" end
page = {title = "evil"}
```

Text.
EOF
    kv build
    expect_rc 0
    expect_no_grep site/notes/shadow/index.html "evil"
    expect_grep site/notes/shadow/index.html "Shadow"
}

# ---------- publishing under faults (issue 14) ----------

# many_notes N: N more notes, so that publishing has many files to move
many_notes() {
    local i
    for ((i = 1; i <= $1; i++)); do
        printf -- '---\ntitle: Bulk %s\n---\n\nBulk note %s.\n' "$i" "$i" >"$W/content/notes/bulk$i.md"
    done
}

# An incremental build killed at any moment leaves the old output or the new
# one, never a mix: 20 runs, SIGKILL after a delay from a seeded sequence
# around the publish step (KVSITE_TRACE gives when it runs), each checked
# against the old and the new full build's listing.
t_incremental_publish_killed() {
    fresh good
    many_notes 200
    local head=$W/templates/partials/head.html
    cp "$head" "$W.head"
    kv build
    expect_rc 0
    listing "$W/site" >"$W.old"
    # the new state: an include every page uses, so every page file changes
    printf '<!-- edited -->\n' >>"$head"
    kv build --no-cache -o "$W.newsite"
    expect_rc 0
    listing "$W.newsite" >"$W.new"
    rm -rf "$W.newsite" "$(dirname "$W")"/.project.newsite.*
    cp "$W.head" "$head"
    kv build
    # where the publish step falls, in milliseconds from the start
    printf '<!-- edited -->\n' >>"$head"
    (cd "$W" && KVSITE_TRACE=1 "$KVSITE" build -j 2) 2>"$W.trace" >/dev/null
    grep -q ' rendered, ' "$W.trace" || { fail "not incremental: $(grep built "$W.trace")"; return; }
    local pub
    pub=$(awk '/trace: links checked at/ { print int($6 * 1000) }' "$W.trace")
    [ -n "$pub" ] || { fail "no trace of the publish step"; return; }
    local run delay at mixed=0 kinds=""
    RANDOM=14
    for ((run = 1; run <= 20; run++)); do
        cp "$W.head" "$head"
        kv build # back to the old output, its cache saved
        cmp -s <(listing "$W/site") "$W.old" || { fail "run $run: could not go back to the old output"; return; }
        printf '<!-- edited -->\n' >>"$head"
        # 0 to 2x the publish moment: before, during and after it
        delay=$(((RANDOM % (2 * pub + 40)) + 1))
        (cd "$W" && exec "$KVSITE" build -j 2 >/dev/null 2>&1) &
        at=$!
        sleep "$(awk -v d="$delay" 'BEGIN { printf "%.3f", d / 1000 }')"
        kill -9 "$at" 2>/dev/null
        wait "$at" 2>/dev/null
        listing "$W/site" >"$W.now"
        if cmp -s "$W.now" "$W.old"; then kinds+=o
        elif cmp -s "$W.now" "$W.new"; then kinds+=n
        else mixed=$((mixed + 1)); kinds+=X; fi
    done
    [ "$mixed" -eq 0 ] || fail "$mixed of 20 killed builds left an output that is neither the old nor the new one ($kinds)"
    # the next build finishes the job: the new output, as a full build makes it
    kv build
    expect_rc 0
    listing "$W/site" >"$W.now"
    cmp -s "$W.now" "$W.new" || fail "the build after a killed one differs from a full build"
}

# A full build over an output leaves the staging folder (the old output)
# marked as the new one's copy but for the pages that differ, its other files
# and those it dropped, so the next incremental build does not compare the two
# folders file by file; its output is still a full build's. Full builds
# killed at any moment (the mark is written last, whole or not at all) leave
# the next build the same output as a full one.
t_full_build_leaves_mark() {
    fresh good
    many_notes 40
    kv build
    expect_rc 0
    kv build --no-cache # over the output, nothing changed
    expect_rc 0
    local mark=$W/.kvsite/site.synced
    if [ ! -f "$mark" ]; then fail "no .kvsite/site.synced after a full build over an output"; return; fi
    grep -qaF 'feed.xml' "$mark" || fail "the mark lacks the extras"
    if grep -qaF 'notes/bulk1/' "$mark"; then fail "the mark lists a page whose bytes did not change"; fi
    printf '\nEdited after a full build.\n' >>"$W/content/notes/bulk1.md"
    kv build
    expect_rc 0
    grep -q '1 rendered' "$W.err" || fail "not incremental: $(tail -n 1 "$W.err")"
    kv build --no-cache -o "$W.full"
    listing "$W.full" >"$W.want"
    rm -rf "$W.full" "$(dirname "$W")/.kvsite"
    cmp -s <(listing "$W/site") "$W.want" || fail "the incremental build after a full one differs from a full build"
    # killed full builds, then an edit
    local head=$W/templates/partials/head.html run delay
    RANDOM=16
    for ((run = 1; run <= 8; run++)); do
        printf '<!-- run %s -->\n' "$run" >>"$head"
        delay=$(((RANDOM % 400) + 1))
        (cd "$W" && exec "$KVSITE" build -j 2 --no-cache >/dev/null 2>&1) &
        local at=$!
        sleep "$(awk -v d="$delay" 'BEGIN { printf "%.3f", d / 1000 }')"
        kill -9 "$at" 2>/dev/null
        wait "$at" 2>/dev/null
        printf '\nEdit %s.\n' "$run" >>"$W/content/notes/bulk2.md"
        kv build
        expect_rc 0
        kv build --no-cache -o "$W.full"
        listing "$W.full" >"$W.want"
        rm -rf "$W.full" "$(dirname "$W")/.kvsite"
        cmp -s <(listing "$W/site") "$W.want" || { fail "run $run (killed after $delay ms): the build after it differs from a full build"; return; }
    done
}

# A mark whose bytes changed (one listed name turned into another) is no
# mark: it would spare the staging folder's stale copy of the page it no
# longer lists, and the next publish would put that copy out.
t_changed_mark_is_no_mark() {
    fresh good
    many_notes 12
    kv build
    expect_rc 0
    printf '\nThe first edit.\n' >>"$W/content/notes/bulk1.md"
    kv build
    expect_rc 0
    local mark=$W/.kvsite/site.synced
    grep -qaF 'notes/bulk1/index.html' "$mark" || { fail "the mark does not list the edited page"; return; }
    LC_ALL=C sed -i 's|notes/bulk1/index\.html|notes/bulkX/index.html|' "$mark"
    printf '\nThe second edit.\n' >>"$W/content/notes/bulk2.md"
    kv build
    expect_rc 0
    expect_grep site/notes/bulk1/index.html 'The first edit.'
    same_as_full changed-mark
}

# Bytes of kvsite's state files (.kvsite: the cache, the stamp, the mark,
# the tables, the walks' memos) and of the staging folder's pages changed at
# random between edits: each build after that still writes what a full build
# writes. A state file that does not check costs work, never a wrong page.
# STATE_SEED=N runs another sequence.
t_state_files_changed_at_random() {
    fresh good
    many_notes 24
    kv build
    expect_rc 0
    kv build --no-cache # a staging folder, a mark and tables, as a writer has them
    expect_rc 0
    RANDOM=${STATE_SEED:-6} # 6: a run that changes the mark (fails before the mark was sealed)
    local run files f size k at byte
    for ((run = 1; run <= 16; run++)); do
        printf '\nEdit %s.\n' "$run" >>"$W/content/notes/bulk$((RANDOM % 24 + 1)).md"
        if ((RANDOM % 4)); then
            mapfile -t files < <(find "$W/.kvsite" -maxdepth 1 -type f -size +0 | sort)
        else
            mapfile -t files < <(find "$W/.kvsite/site.prev" -type f -name '*.html' | sort)
        fi
        [ "${#files[@]}" -gt 0 ] || continue
        f=${files[$((RANDOM % ${#files[@]}))]}
        size=$(stat -c %s "$f")
        for ((k = 0; k < 4; k++)); do
            at=$(((RANDOM * 32768 + RANDOM) % size))
            byte=$(printf '\\x%02x' $((RANDOM % 256)))
            printf "$byte" | dd of="$f" bs=1 seek="$at" conv=notrunc status=none
        done
        kv build
        expect_rc 0
        same_as_full "$run"
        [ -z "$WHY" ] || { fail "step $run changed ${f##*/.kvsite/}"; return; }
    done
}

# An incremental build checks the staging folder's copy of each page it
# takes from the cache when that copy is the one its publish swaps in (the
# mark does not list it), and then does not stat those files again for the
# next no-change check. A copy changed there since is not published: the
# output's file is copied over it (before, it was published as it was).
# After a full build and after an incremental one.
t_incremental_checks_staging_copy() {
    fresh good
    many_notes 40
    kv build
    expect_rc 0
    kv build --no-cache # over the output: the old output is the staging folder, marked
    expect_rc 0
    local prev=$W/.kvsite/site.prev step
    for step in 1 2; do
        [ -f "$prev/notes/bulk$((step + 2))/index.html" ] ||
            { fail "step $step: no staging copy of bulk$((step + 2))"; return; }
        printf '<p>planted %s</p>\n' "$step" >>"$prev/notes/bulk$((step + 2))/index.html"
        printf '\nEdit %s.\n' "$step" >>"$W/content/notes/bulk$step.md"
        kv build
        expect_rc 0
        rendered 1
        grep -qr "planted" "$W/site" && fail "step $step: a changed staging copy was published"
        same_as_full "$step"
        kv build
        grep -q '^kvsite: up to date' "$W.err" ||
            fail "step $step: the build after it was not up to date: $(tail -n 1 "$W.err")"
    done
}

# The installed theme and checks library are inputs like the site's own
# files: an edit of the theme (its author's, or a package that replaces it
# without a new binary) makes the next build render again, not "up to date".
# The binary runs from an installed layout of its own (<prefix>/bin,
# <prefix>/share/kvsite) so that the theme edited is a copy.
t_installed_theme_edit_rebuilds() {
    fresh good
    local inst=$W.inst saved=$KVSITE
    mkdir -p "$inst/bin" "$inst/share/kvsite"
    cp "$KVSITE" "$inst/bin/kvsite"
    cp -R "$ROOT/share/theme" "$inst/share/kvsite/theme"
    cp -R "$ROOT/checks" "$inst/share/kvsite/checks"
    printf 'theme: default\n' >>"$W/site.yaml"
    KVSITE=$inst/bin/kvsite
    kv build
    expect_rc 0
    printf '\n/* edited in the installed theme */\n' >>"$inst/share/kvsite/theme/assets/theme.css"
    kv build
    expect_rc 0
    grep -q 'up to date' "$W.err" && fail "an edit of the installed theme left the build up to date"
    grep -qF 'edited in the installed theme' "$W/site/assets/theme.css" 2>/dev/null ||
        fail "the theme's edited stylesheet was not published"
    printf '\n-- edited in the installed library\n' >>"$inst/share/kvsite/checks/kv.lua"
    kv build
    expect_rc 0
    grep -q 'up to date' "$W.err" && fail "an edit of the installed checks library left the build up to date"
    KVSITE=$saved
}

# The mark a full build leaves names the files the old output had and the new
# one lacks (the old output was scanned while the pages rendered): a stray
# file in the output before a full build does not come back with the next
# incremental one, nor does a page removed by the full build.
t_full_build_mark_old_files() {
    fresh good
    many_notes 12
    kv build
    expect_rc 0
    printf 'stray\n' >"$W/site/stray.txt"
    mkdir -p "$W/site/stray-dir/deeper" && printf 'x\n' >"$W/site/stray-dir/deeper/f.txt"
    rm "$W/content/notes/bulk3.md"
    kv build --no-cache
    expect_rc 0
    [ -e "$W/site/stray.txt" ] && fail "the full build kept a stray file"
    grep -qaF 'stray.txt' "$W/.kvsite/site.synced" || fail "the mark lacks the old output's stray file"
    grep -qaF 'notes/bulk3/index.html' "$W/.kvsite/site.synced" || fail "the mark lacks the removed page"
    printf '\nEdited.\n' >>"$W/content/notes/bulk1.md"
    kv build
    expect_rc 0
    grep -q '1 rendered' "$W.err" || fail "not incremental: $(tail -n 1 "$W.err")"
    [ -e "$W/site/stray.txt" ] && fail "the stray file came back with the incremental build"
    [ -e "$W/site/stray-dir/deeper/f.txt" ] && fail "the stray folder came back with the incremental build"
    [ -e "$W/site/notes/bulk3/index.html" ] && fail "the removed page came back with the incremental build"
    kv build --no-cache -o "$W.full"
    listing "$W.full" >"$W.want"
    rm -rf "$W.full" "$(dirname "$W")/.kvsite"
    cmp -s <(listing "$W/site") "$W.want" || fail "the incremental build after a full one differs from a full build"
}

# A FIFO planted in the published output where a page goes: a build compares
# the page with what is there and must not block opening it (a FIFO's open
# waits for a writer); the new output has the page as a file. A full build,
# then an incremental one (which compares its changed pages with the output).
t_fifo_in_output() {
    fresh good
    many_notes 3
    kv build
    expect_rc 0
    local f=site/notes/bulk1/index.html
    rm "$W/$f" && mkfifo "$W/$f"
    kv build --no-cache
    expect_rc 0
    [ -f "$W/$f" ] && [ ! -p "$W/$f" ] || fail "the full build left $f a FIFO"
    expect_grep "$f" 'Bulk note 1.'
    f=site/notes/bulk2/index.html
    rm "$W/$f" && mkfifo "$W/$f"
    printf '\nEdited.\n' >>"$W/content/notes/bulk2.md"
    kv build
    expect_rc 0
    grep -q '1 rendered' "$W.err" || fail "not incremental: $(tail -n 1 "$W.err")"
    [ -f "$W/$f" ] && [ ! -p "$W/$f" ] || fail "the incremental build left $f a FIFO"
    expect_grep "$f" 'Edited.'
}

# FIFOs in place of the files kvsite keeps beside the output (its cache, the
# up-to-date stamp, the mark of the staging folder): read without waiting on
# them, taken as absent (a full build), and replaced by files again.
t_fifo_in_state() {
    fresh good
    many_notes 2
    kv build
    expect_rc 0
    local k
    for k in cache stamp synced; do
        rm -f "$W/.kvsite/site.$k" && mkfifo "$W/.kvsite/site.$k"
    done
    printf '\nEdited.\n' >>"$W/content/notes/bulk1.md"
    kv build
    expect_rc 0
    grep -q 'rendered' "$W.err" && fail "an incremental build from a FIFO cache: $(tail -n 1 "$W.err")"
    expect_grep site/notes/bulk1/index.html 'Edited.'
    for k in cache stamp; do
        [ -f "$W/.kvsite/site.$k" ] || fail "site.$k is not a file again"
    done
    kv build
    expect_rc 0
    grep -q 'up to date' "$W.err" || fail "not up to date after the build: $(tail -n 1 "$W.err")"
}

# Hard links planted where kvsite writes: in the staging folder a full build
# rewrites (a page that changed), and in place of its cache, stamp and mark.
# A write through one would change the file outside the project that it
# names too, and publish it: each is replaced by a new file instead.
# The output tables (.kvsite/site.files, site.prev.files) let a full build
# tell a page is unchanged from a stat: a hand edit of a published or a
# staged page, of the same size and with its mtime put back, still shows
# (ctime) and is repaired; tables that are garbage cost reads, not bytes.
t_output_tables_repair_hand_edits() {
    fresh good
    many_notes 3
    local i
    for i in 1 2 3; do
        kv build --no-cache
        expect_rc 0
        sleep 0.3 # the pages' times before the next tables' start: not racy
    done
    local t
    for t in files prev.files; do
        [ "$(stat -c %s "$W/.kvsite/site.$t" 2>/dev/null || echo 0)" -gt 500 ] ||
            fail "the table site.$t lists no pages"
    done
    local f=notes/bulk1/index.html g=notes/bulk2/index.html m
    cp "$W/site/$f" "$W.f" && cp "$W/site/$g" "$W.g"
    cmp -s "$W/site/$g" "$W/.kvsite/site.prev/$g" || fail "the staging folder is not the output's copy"
    for t in "site/$f" ".kvsite/site.prev/$g"; do
        m=$(stat -c %y "$W/$t")
        printf 'X' | dd of="$W/$t" bs=1 seek=20 conv=notrunc status=none
        touch -d "$m" "$W/$t"
    done
    kv build --no-cache
    expect_rc 0
    cmp -s "$W/site/$g" "$W.g" || fail "a staged page edited by hand was published"
    kv build --no-cache
    expect_rc 0
    cmp -s "$W/site/$f" "$W.f" || fail "a published page edited by hand stayed through two builds"
    # an incremental build after them agrees with a full build from nothing
    printf '\nEdited.\n' >>"$W/content/notes/bulk3.md"
    kv build
    expect_rc 0
    grep -q '1 rendered' "$W.err" || fail "not incremental: $(tail -n 1 "$W.err")"
    # the tables, exchanged with the folders: a staged page edited by hand
    # after it is still repaired by the next full build
    cp "$W/.kvsite/site.prev/$g" "$W.g2"
    m=$(stat -c %y "$W/.kvsite/site.prev/$g")
    printf 'Z' | dd of="$W/.kvsite/site.prev/$g" bs=1 seek=20 conv=notrunc status=none
    touch -d "$m" "$W/.kvsite/site.prev/$g"
    kv build --no-cache
    expect_rc 0
    cmp -s "$W/site/$g" "$W.g2" || fail "a staged page edited by hand after an incremental build was published"
    # garbage tables: ignored
    kv build --no-cache
    expect_rc 0
    for t in files prev.files; do
        head -c 300 /dev/urandom >"$W/.kvsite/site.$t"
    done
    printf 'Y' | dd of="$W/site/$f" bs=1 seek=20 conv=notrunc status=none
    kv build --no-cache
    expect_rc 0
    kv build --no-cache
    expect_rc 0
    rm -rf "$W.full"
    (cd "$W" && "$KVSITE" build --no-cache -o "$W.full" >/dev/null 2>&1) || fail "the fresh build failed"
    diff -r -q "$W/site" "$W.full" >"$W.diff" 2>&1 || fail "the output differs from a fresh build: $(head -n 3 "$W.diff")"
}

# The tables are kvsite's own files, but what stands in their place is
# whatever it is: a table cut short (its checksum), a link (not followed: the
# file it names is neither read nor written), a FIFO (not waited on) or a
# folder is no table, costs reads and never bytes, and the build goes on and
# leaves a table again where it can.
t_output_tables_odd_files() {
    fresh good
    many_notes 2
    local i t f=notes/bulk1/index.html
    for i in 1 2; do
        kv build --no-cache
        expect_rc 0
        sleep 0.3
    done
    kv build --no-cache
    expect_rc 0
    cp "$W/site/$f" "$W.f"
    for t in files prev.files; do
        # a valid table's first half
        head -c "$(($(stat -c %s "$W/.kvsite/site.$t") / 2))" "$W/.kvsite/site.$t" >"$W.cut"
        mv "$W.cut" "$W/.kvsite/site.$t"
    done
    printf 'Y' | dd of="$W/site/$f" bs=1 seek=20 conv=notrunc status=none
    kv build --no-cache
    expect_rc 0
    cmp -s "$W/site/$f" "$W.f" || fail "a table cut short kept a page edited by hand"
    # a link to a file outside the project, in place of each table
    printf 'outside\n' >"$W.outside"
    for t in files prev.files; do
        rm -f "$W/.kvsite/site.$t"
        ln -s "$W.outside" "$W/.kvsite/site.$t"
    done
    kv build --no-cache
    expect_rc 0
    [ "$(cat "$W.outside")" = outside ] || fail "a table's link was written through"
    for t in files prev.files; do
        [ -f "$W/.kvsite/site.$t" ] && [ ! -L "$W/.kvsite/site.$t" ] ||
            fail "site.$t is not a table of its own again"
    done
    # a FIFO: the build neither waits on it nor fails
    rm -f "$W/.kvsite/site.files"
    mkfifo "$W/.kvsite/site.files"
    kv build --no-cache
    expect_rc 0
    [ "$RC" != 124 ] || fail "the build waited on a FIFO in place of a table"
    [ -f "$W/.kvsite/site.files" ] && [ ! -p "$W/.kvsite/site.files" ] ||
        fail "site.files is not a table again after a FIFO"
    # a folder: the table cannot be written there, and only goes missing
    rm -f "$W/.kvsite/site.files"
    mkdir "$W/.kvsite/site.files"
    kv build --no-cache
    expect_rc 0
    [ -d "$W/.kvsite/site.files" ] || fail "the folder in place of a table went"
    rmdir "$W/.kvsite/site.files"
    printf 'Z' | dd of="$W/site/$f" bs=1 seek=20 conv=notrunc status=none
    kv build --no-cache
    expect_rc 0
    cmp -s "$W/site/$f" "$W.f" || fail "a page edited by hand stayed"
    rm -f "$W.outside" "$W.f"
}

t_hardlink_planted() {
    fresh good
    many_notes 2
    kv build
    expect_rc 0
    kv build --no-cache
    expect_rc 0
    local victim=$W.victim f=notes/bulk1/index.html k
    printf 'precious\n' >"$victim"
    rm "$W/.kvsite/site.prev/$f" && ln "$victim" "$W/.kvsite/site.prev/$f"
    printf '\nEdited.\n' >>"$W/content/notes/bulk1.md"
    kv build --no-cache
    expect_rc 0
    [ "$(cat "$victim")" = precious ] || fail "the full build wrote through a hard link in the staging folder"
    expect_grep "site/$f" 'Edited.'
    [ "$(stat -c %h "$W/site/$f")" = 1 ] || fail "the published page is a hard link"
    # one with the page's own bytes: published, it would follow the other name
    local same=$W.same g=notes/bulk2/index.html
    kv build --no-cache
    expect_rc 0
    cp "$W/.kvsite/site.prev/$g" "$same"
    rm "$W/.kvsite/site.prev/$g" && ln "$same" "$W/.kvsite/site.prev/$g"
    kv build --no-cache
    expect_rc 0
    [ "$(stat -c %h "$W/site/$g")" = 1 ] || fail "a hard link with the page's bytes was published"
    cmp -s "$same" "$W/site/$g" || fail "$g changed"
    # and an incremental build that brings the staging folder level with the
    # output file by file (no mark): a hard link there with the output's
    # bytes is not kept either
    local h=notes/bulk2/index.html
    kv build --no-cache
    expect_rc 0
    rm -f "$W/.kvsite/site.synced" "$W.same2"
    cp "$W/site/$h" "$W.same2"
    rm "$W/.kvsite/site.prev/$h" && ln "$W.same2" "$W/.kvsite/site.prev/$h"
    printf '\nOnce more.\n' >>"$W/content/notes/bulk1.md"
    kv build
    expect_rc 0
    grep -q '1 rendered' "$W.err" || fail "not incremental: $(tail -n 1 "$W.err")"
    [ "$(stat -c %h "$W/site/$h")" = 1 ] || fail "the incremental publish kept a hard link"
    for k in cache stamp synced; do
        rm -f "$W/.kvsite/site.$k" && ln "$victim" "$W/.kvsite/site.$k"
    done
    printf '\nAgain.\n' >>"$W/content/notes/bulk1.md"
    kv build
    expect_rc 0
    [ "$(cat "$victim")" = precious ] || fail "a state file was written through a hard link"
    expect_grep "site/$f" 'Again.'
    kv build
    expect_rc 0
    grep -q 'up to date' "$W.err" || fail "not up to date after the build: $(tail -n 1 "$W.err")"
}

# A publish that fails (a folder of the output that cannot be changed, even by
# root: chattr +i) says the previous output is unchanged only when it is; the
# output is the old one or the new one either way.
t_incremental_publish_fails() {
    command -v chattr >/dev/null || return 0
    fresh good
    kv build
    expect_rc 0
    listing "$W/site" >"$W.old"
    chattr +i "$W/site/notes" 2>/dev/null || return 0 # no CAP_LINUX_IMMUTABLE: not testable here
    printf '<!-- edited -->\n' >>"$W/templates/partials/head.html"
    kv build
    chattr -i "$W/site/notes" "$W/.kvsite/site.prev/notes" 2>/dev/null
    listing "$W/site" >"$W.now"
    if [ "$RC" -eq 0 ]; then
        kv build --no-cache -o "$W.newsite"
        listing "$W.newsite" >"$W.new"
        cmp -s "$W.now" "$W.new" || fail "a build that succeeded left an output that is not the new one"
        rm -rf "$W.newsite" "$W/.newsite".*
    else
        grep -q 'the previous output is unchanged' "$W.err" &&
            ! cmp -s "$W.now" "$W.old" && fail "the output changed although the build says it did not"
    fi
}

# -o / and -o at an ancestor of the project are refused, and nothing is
# written (no lock, cache or staging folder beside them).
t_output_root_refused() {
    fresh good
    local before after
    before=$(ls -a / | sort)
    kv build -o /
    expect_rc 2
    expect_summary "$SUMMARY_CONFIG"
    after=$(ls -a / | sort)
    [ "$before" = "$after" ] || fail "kvsite wrote at the root: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
    local up
    up=$(ls -a "$(dirname "$W")" | sort)
    kv build -o ..
    expect_rc 2
    expect_summary "$SUMMARY_CONFIG"
    [ "$up" = "$(ls -a "$(dirname "$W")" | sort)" ] || fail "kvsite wrote beside the project"
    kv build -o "$(dirname "$(dirname "$W")")"
    expect_rc 2
    expect_no_file site
}

# limits.output_bytes stops the build as soon as it is passed: one error, and
# nothing of the build on disk (no output, no staged pages).
t_output_bytes_cap_leaves_nothing() {
    fresh good
    local i long
    long=$(printf 'word %.0s' $(seq 1 6000))
    for i in $(seq 1 60); do
        printf -- '---\ntitle: Long %s\n---\n\n%s\n' "$i" "$long" >"$W/content/notes/long$i.md"
    done
    printf 'limits:\n  output_bytes: 1048576\n' >>"$W/site.yaml"
    kv build -j 2
    expect_rc 1
    expect_summary "$SUMMARY_FAILED"
    local n
    n=$(grep -c 'error: the site is larger than limits.output_bytes' "$W.err")
    [ "$n" = 1 ] || fail "$n errors about limits.output_bytes, expected 1: $(head -n 3 "$W.err")"
    expect_no_file site
    local left
    left=$(find "$W" -path "$W/content" -prune -o -path "$W/templates" -prune -o -path "$W/checks" -prune \
        -o -type f -name '*.html' -print | head -n 3)
    [ -z "$left" ] || fail "pages left on disk: $left"
}

# A site far over limits.output_bytes stops rendering where the pages' bytes,
# added up in page order, pass it: the error names that page and that sum, the
# same with one worker or three, and nothing of the pages after it is said
# (a worker that ran ahead of the others finished some of them).
t_output_bytes_cap_stops_where_passed() {
    fresh good
    local i long first="" again
    long=$(printf 'word %.0s' $(seq 1 6000))
    for i in $(seq -w 1 60); do
        printf -- '---\ntitle: Long %s\n---\n\n%s\n' "$i" "$long" >"$W/content/notes/a$i.md"
    done
    for i in $(seq -w 1 200); do
        printf -- '---\ntitle: Late %s\n---\n\n`1 GB {= 2}`\n' "$i" >"$W/content/notes/z$i.md"
    done
    printf 'limits:\n  output_bytes: 1048576\n' >>"$W/site.yaml"
    for j in 1 3 2; do
        kv build -j "$j"
        expect_rc 1
        expect_summary "$SUMMARY_FAILED"
        expect_no_file site
        sed '$d' "$W.err" >"$W.got"
        if ! grep -Eq '^content/notes/a[0-9]+\.md: error: the site is larger than limits.output_bytes \(10[0-9]{5} > 1048576 bytes\)$' "$W.got"; then
            fail "-j $j: no error at the page that passed the cap, within a page of it: $(head -n 3 "$W.got")"
        fi
        if grep -q 'content/notes/z' "$W.got"; then
            fail "-j $j: pages after the cap were reported: $(grep -m 2 'content/notes/z' "$W.got")"
        fi
        if [ -z "$first" ]; then
            first=$(cat "$W.got")
        elif [ "$(cat "$W.got")" != "$first" ]; then
            fail "-j $j reports otherwise than -j 1: $(diff <(echo "$first") "$W.got" | head -n 4)"
        fi
    done
    # under the cap again, every page is there and every late page's error said
    sed -i 's/output_bytes: 1048576/output_bytes: 104857600/' "$W/site.yaml"
    kv build -j 2
    expect_rc 1
    again=$(grep -c '^content/notes/z[0-9]*\.md:5:2: error: quoted 1 GB, but 2 = 0.00 GB$' "$W.err")
    [ "$again" = 200 ] || fail "$again of the 200 late pages' errors, expected all"
}

# Fingerprinted stylesheets and scripts are held in memory until they are
# copied: together they stay within limits.output_bytes (a pull request's 40
# stylesheets of 64 KiB against a 1 MiB cap): one located error, no output.
t_fingerprinted_assets_within_cap() {
    fresh good
    local i
    mkdir -p "$W/templates/assets"
    for i in $(seq 1 40); do
        head -c 65536 /dev/zero | tr '\0' 'a' >"$W/templates/assets/big$i.css"
    done
    printf 'limits:\n  output_bytes: 1048576\n' >>"$W/site.yaml"
    kv build
    expect_rc 1
    local n
    n=$(grep -c 'templates/assets/big[0-9]*\.css: error: the site is larger than limits.output_bytes' "$W.err")
    [ "$n" -ge 1 ] || fail "no located error about limits.output_bytes: $(head -n 3 "$W.err")"
    expect_no_file site
}

# A failed full build leaves no staging bulk (on a full disk it would keep the
# disk full), and the output as it was.
t_failed_build_leaves_no_staging() {
    good_built || return
    kv build --no-cache
    expect_rc 0
    printf -- '---\ntitle: [broken\n---\n' >"$W/content/notes/broken.md"
    kv build --no-cache
    expect_rc 1
    hashes "$W/site" >"$W.snap2"
    cmp -s "$W.snap" "$W.snap2" || fail "site/ changed although the build failed"
    local left
    left=$(find "$W/.kvsite/site.prev" "$W/.kvsite/site.incr" -type f 2>/dev/null | head -n 3)
    [ -z "$left" ] || fail "the failed build left files beside the output: $left"
    rm "$W/content/notes/broken.md"
    kv build
    expect_rc 0
    hashes "$W/site" >"$W.snap2"
    cmp -s "$W.snap" "$W.snap2" || fail "the build after a failed one differs"
}

# kvsite render follows the build's rule: --strict makes warnings errors.
t_render_strict() {
    fresh good
    KV_STDIN=$W/content/notes/week-1.md kv render --strict
    expect_rc 0
    [ -s "$W.out" ] || fail "render --strict printed nothing"
}

# ---------- one producer per output file; file names; active files (issues 14.4, 14.5, 22.4) ----------

# allow_active PATTERN...: the good fixture's content.allow_active, with these
# patterns besides its own SVG
allow_active() {
    local list='"articles/layout.svg"' p
    for p in "$@"; do list+=", \"$p\""; done
    sed -i "s|^  allow_active: .*|  allow_active: [$list]|" "$W/site.yaml"
}

# a page of the good fixture's kind at PATH
small_page() { printf -- '---\ntitle: %s\n---\nBody.\n' "${2:-A page}" | page "$1"; }

# A file of content/ in the home page's place does not replace it.
t_collide_home_page() {
    good_built || return
    allow_active index.html
    echo '<p>forged</p>' | page content/index.html
    kv build
    expect_failed_build <<'EOF'
content/index.html: error: would publish /index.html, which content/_index.md publishes too
EOF
}

# The checks report, its JSON and the tag and sources pages are kvsite's: a
# pull request cannot publish a forged report in their place.
t_collide_generated_pages() {
    good_built || return
    allow_active checks/index.html sources/index.html
    echo '{"figures": []}' | page content/checks.json
    echo '<p>all verified</p>' | page content/checks/index.html
    echo '<p>sources</p>' | page content/sources/index.html
    small_page content/tags.md "Tags"
    small_page content/tags/kv-cache.md "A tag"
    kv build
    expect_failed_build <<'EOF'
content: error: two pages on one URL /tags/: this page and content/tags.md
content/checks.json: error: would publish /checks.json, which kvsite writes (the checks report, as JSON)
content/checks/index.html: error: would publish /checks/index.html, which kvsite writes (the checks report)
content/sources/index.html: error: would publish /sources/index.html, which kvsite writes (the sources page)
content/tags.md:1:1: error: would publish /tags/index.html, which kvsite writes (the tag index)
content/tags/kv-cache.md:1:1: error: would publish /tags/kv-cache/index.html, which kvsite writes (the page of tag "kv-cache")
EOF
}

# A folder of pages makes a section page where kvsite's own would be.
t_collide_generated_section() {
    good_built || return
    small_page content/checks/mine.md "Mine"
    kv build
    expect_failed_build <<'EOF'
content/checks: error: would publish /checks/index.html (the section page of content/checks/), which kvsite writes (the checks report)
EOF
}

t_collide_checks_page() {
    good_built || return
    small_page content/checks.md "Checks"
    kv build
    expect_failed_build <<'EOF'
content/checks.md:1:1: error: would publish /checks/index.html, which kvsite writes (the checks report)
EOF
}

t_collide_404_feed_sitemap() {
    good_built || return
    allow_active 404.html '*.xml'
    echo '<p>lost</p>' | page content/404.html
    echo '<feed/>' | page content/feed.xml
    echo '<urlset/>' | page content/sitemap.xml
    kv build
    expect_failed_build <<'EOF'
content/404.html: error: would publish /404.html, which kvsite writes (the page for URLs not found)
content/feed.xml: error: would publish /feed.xml, which kvsite writes (the feed)
content/sitemap.xml: error: would publish /sitemap.xml, which kvsite writes (the sitemap)
EOF
}

# A file beside a page's source, where the page is published.
t_collide_file_beside_page() {
    good_built || return
    allow_active articles/kv-cache/index.html
    echo '<p>other</p>' | page content/articles/kv-cache/index.html
    kv build
    expect_failed_build <<'EOF'
content/articles/kv-cache/index.html: error: would publish /articles/kv-cache/index.html, which content/articles/kv-cache.md publishes too
EOF
}

# content/assets/ against templates/assets/, and a file where a folder must be.
t_collide_assets_and_folders() {
    good_built || return
    echo 'body{}' | page content/assets/css/site.css
    echo x | page content/sitemap.xml/a.png
    printf -- '---\ntitle: A\nslug: feed.xml\n---\nBody.\n' | page content/x.md
    kv build
    expect_failed_build <<'EOF'
content/assets/css/site.css: error: would publish /assets/css/site.css, which templates/assets/css/site.css publishes too
content/sitemap.xml/a.png: error: would publish /sitemap.xml/a.png inside /sitemap.xml, which kvsite writes (the sitemap) as a file
content/x.md:3:7: error: would publish /feed.xml/index.html inside /feed.xml, which kvsite writes (the feed) as a file
EOF
}

# Names that are one file on macOS or Windows: letter case, NFC against NFD
# (the later name in the walk's order is blamed).
t_collide_case_and_normalisation() {
    good_built || return
    local cafe_nfc=$'caf\xc3\xa9' cafe_nfd=$'cafe\xcc\x81' ete_nfc=$'\xc3\xa9t\xc3\xa9' ete_nfd=$'e\xcc\x81te\xcc\x81'
    echo x | page content/notes/Photo.png
    echo x | page content/notes/photo.PNG
    echo x | page "content/notes/$cafe_nfc.png"
    echo x | page "content/notes/$cafe_nfd.png"
    small_page "content/notes/$ete_nfc.md"
    small_page "content/notes/$ete_nfd.md"
    echo x | page content/Sitemap.xml
    allow_active Sitemap.xml
    kv build
    expect_failed_build <<EOF
content/Sitemap.xml: error: would publish /Sitemap.xml, which differs from /sitemap.xml, which kvsite writes (the sitemap), only in letter case: they collide on case-insensitive file systems
content/notes/$cafe_nfc.png: error: would publish /notes/$cafe_nfc.png, which differs from /notes/$cafe_nfd.png, which content/notes/$cafe_nfd.png publishes too, only in Unicode normalisation (NFC and NFD): they collide on file systems that normalise names (macOS)
content/notes/photo.PNG: error: would publish /notes/photo.PNG, which differs from /notes/Photo.png, which content/notes/Photo.png publishes too, only in letter case: they collide on case-insensitive file systems
content/notes/$ete_nfc.md:1:1: error: URL /notes/$ete_nfc/ differs from /notes/$ete_nfd/ only in Unicode normalisation (NFC and NFD): they collide on file systems that normalise names (macOS)
EOF
}

# File names that are not UTF-8, or hold control characters, would go into
# URLs, the sitemap and the feed as they are: refused, the bytes shown escaped.
t_names_not_utf8_or_control() {
    good_built || return
    small_page content/articles/$'bad\xff.md'
    echo x | page content/$'img\xfe.png'
    echo x | page content/$'a\001b.png'
    small_page content/$'dir\033x'/page.md
    echo x | page templates/assets/$'x\xff.css'
    kv build
    expect_failed_build <<'EOF'
content/a\x01b.png: error: a file or folder name with a control character: refused (rename it)
content/articles/bad\xff.md: error: a file or folder name that is not UTF-8: refused (it would be published as is in URLs, the sitemap and the feed; rename it)
content/dir\x1bx: error: a file or folder name with a control character: refused (rename it)
content/img\xfe.png: error: a file or folder name that is not UTF-8: refused (it would be published as is in URLs, the sitemap and the feed; rename it)
templates/assets/x\xff.css: error: a file or folder name that is not UTF-8: refused (it would be published as is in URLs, the sitemap and the feed; rename it)
EOF
}

# Files a browser runs script from are refused in content/, --strict or not,
# unless site.yaml's content.allow_active names them.
t_active_files_refused() {
    good_built || return
    local f
    for f in doc.html logo.svg x.js a.xhtml b.htm c.svgz d.mjs e.XML f.xsl; do
        echo '<script>alert(1)</script>' | page "content/$f"
    done
    kv build
    expect_failed_build <<'EOF'
content/a.xhtml: error: refused: a .xhtml file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
content/b.htm: error: refused: a .htm file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
content/c.svgz: error: refused: a .svgz file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
content/d.mjs: error: refused: a .mjs file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
content/doc.html: error: refused: a .html file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
content/e.XML: error: refused: a .XML file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
content/f.xsl: error: refused: a .xsl file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
content/logo.svg: error: refused: a .svg file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
content/x.js: error: refused: a .js file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
EOF
}

# Allowed by name or by a pattern, whose star stays within one folder.
t_active_files_allowed() {
    fresh good
    allow_active logo.svg 'demos/*.html'
    echo '<svg/>' | page content/logo.svg
    echo '<p>demo</p>' | page content/demos/a.html
    echo '<p>deeper</p>' | page content/demos/sub/b.html
    kv build --strict
    expect_rc 1
    expect_diags <<'EOF'
content/demos/sub/b.html: error: refused: a .html file can run script in the site's origin (list it in site.yaml's content.allow_active to publish it as it is)
EOF
    rm -r "$W/content/demos/sub"
    kv build --strict
    expect_rc 0
    expect_file site/logo.svg
    expect_file site/demos/a.html
}

t_config_allow_active_type() {
    WANT='site.yaml:3:3: error: content.allow_active must be a list of file patterns, not a string' config_case <<'EOF'
title: X
content:
  allow_active: "*.svg"
EOF
}

t_config_allow_active_items() {
    WANT='site.yaml:3:27: error: content.allow_active: every item must be a file pattern ("demos/*.html"), not an integer' config_case <<'EOF'
title: X
content:
  allow_active: ["a.svg", 1]
EOF
}

# ---------- issue 14: front matter keys, templates that start to exist, kvsite's own links ----------

# A template looked up and missing is an input: when it starts to exist, the
# pages that looked for it are rendered again with it (the front matter's
# template:, the section's page.html and section.html, a pcall'd include).
t_incremental_template_appears() {
    fresh good
    kv build
    expect_rc 0
    mkdir -p "$W/templates/notes"
    { printf '<!-- notes card -->\n'; cat "$W/templates/page.html"; } >"$W/templates/notes/page.html"
    kv build
    expect_rc 0
    expect_grep site/notes/week-1/index.html "<!-- notes card -->"
    same_as_full page
    { printf '<!-- notes map -->\n'; cat "$W/templates/section.html"; } >"$W/templates/notes/section.html"
    kv build
    expect_rc 0
    expect_grep site/notes/index.html "<!-- notes map -->"
    same_as_full section
    # an include a template tries under pcall, that starts to exist
    printf '{%% local ok, extra = pcall(include, "partials/extra.html") %%}{{{ ok and extra or "" }}}\n' >>"$W/templates/notes/page.html"
    kv build
    expect_rc 0
    printf '<!-- extra partial -->\n' >"$W/templates/partials/extra.html"
    kv build
    expect_rc 0
    expect_grep site/notes/week-1/index.html "<!-- extra partial -->"
    same_as_full include
}

# Front matter keys: one kvsite does not know and no template reads is a slip
# (a warning with a suggestion, an error with --strict); keys for templates go
# under params:, or are read by the page's template.
t_front_matter_unknown_keys() {
    fresh good
    page content/notes/slips.md <<'EOF'
---
title: Slips
darft: true
tag: [kv]
summery: "Short."
mood: calm
params: {colour: blue}
---
Body.
EOF
    kv build
    expect_rc 0
    expect_diags <<'EOF'
content/notes/slips.md:3:1: warning: unknown front matter key "darft"; did you mean draft?
content/notes/slips.md:4:1: warning: unknown front matter key "tag"; did you mean tags?
content/notes/slips.md:5:1: warning: unknown front matter key "summery"; did you mean summary?
content/notes/slips.md:6:1: warning: unknown front matter key "mood": no template reads page.params.mood (keys for templates go under params:)
EOF
    kv check --strict
    expect_rc 1
    expect_summary ' 4 errors'
    # a key the page's template reads (by name, or through pairs) is the page's own
    mkdir -p "$W/templates/notes"
    { cat "$W/templates/page.html"
      printf '{%% for _, P in ipairs({page.params}) do %%}<p>{{ P.mood }}</p>{%% end %%}<p>{{ page.params.colour }}</p>\n'
      printf '{%% for k in pairs(page.params) do %%}{%% if k == "darft" then %%}<i>{{ k }}</i>{%% end %%}{%% end %%}\n'
    } >"$W/templates/notes/page.html"
    kv check --strict
    expect_rc 0
    sed -i '$d' "$W/templates/notes/page.html"
    kv check --strict
    expect_rc 1
    expect_diags <<'EOF'
content/notes/slips.md:3:1: error: unknown front matter key "darft"; did you mean draft?
content/notes/slips.md:4:1: error: unknown front matter key "tag"; did you mean tags?
content/notes/slips.md:5:1: error: unknown front matter key "summery"; did you mean summary?
EOF
    sed -i '3,5d' "$W/content/notes/slips.md"
    kv build --strict
    expect_rc 0
    expect_grep site/notes/slips/index.html "<p>calm</p><p>blue</p>"
}

# params: must be a map, and may not repeat a top-level key; a page without a
# title names the key that looks like it.
t_front_matter_params_and_title() {
    good_built || return
    page content/notes/a.md <<'EOF'
---
title: A
mood: calm
params:
  mood: calm
  extra: 1
---
Body.
EOF
    page content/notes/b.md <<'EOF'
---
title: B
params: [mood]
---
Body.
EOF
    printf -- '---\ntittle: C\n---\nBody.\n' | page content/notes/c.md
    kv build
    expect_failed_build <<'EOF'
content/notes/a.md:5:3: error: "mood" is both a top-level front matter key and a key of params:
content/notes/b.md:3:9: error: front matter "params" must be a map of keys for templates, not a list
content/notes/c.md:2:1: error: front matter has no "title"; did you mean title, not "tittle"?
EOF
}

# kvsite's own links are checked like the Markdown's: a report template that
# lists no rows leaves every figure's link to its row dangling (one error per
# page, at its first figure, with a count); a sources page without the keys'
# anchors, every cited figure's.
t_links_report_rows() {
    good_built || return
    sed -i 's/ipairs(site.figures.list)/ipairs(site.figures.rows or {})/' "$W/templates/checks.html"
    kv build
    expect_failed_build <<'EOF'
content/articles/kv-cache.md:18:33: error: broken link to /checks/#articles-kv-cache-1: /checks/ has no heading or anchor with id "articles-kv-cache-1", this figure's row in the checks report; so do 8 more figures on this page
content/notes/week-1.md:11:21: error: broken link to /checks/#notes-week-1-1: /checks/ has no heading or anchor with id "notes-week-1-1", this figure's row in the checks report
EOF
}

t_links_sources_anchors() {
    good_built || return
    sed -i 's/id="{{ *[a-z_.]*key *}}"//g; s/id="{{ *[a-z_.]*anchor *}}"//g' "$W/templates/sources.html"
    grep -q 'id=' "$W/templates/sources.html" && { fail "fixture: sources.html still writes ids"; return; }
    kv build
    expect_rc 1
    grep -q '^content/articles/kv-cache.md:[0-9]*:[0-9]*: error: broken link to /sources/#[^:]*: /sources/ has no heading or anchor with id' "$W.err" ||
        fail "no located error for the cited figure's link: $(head -n 3 "$W.err")"
}

# A template's broken links in one page's output: three errors, then a count.
t_links_template_count() {
    good_built || return
    sed -i 's|<tr id="{{ f.anchor }}">|<tr id="{{ f.anchor }}"><td><a href="#no-{{ f.anchor }}">x</a></td>|' "$W/templates/checks.html"
    kv build
    expect_failed_build <<'EOF'
templates/checks.html: error: broken link to /checks/#no-articles-kv-cache-1: /checks/ has no heading or anchor with id "no-articles-kv-cache-1"
templates/checks.html: error: broken link to /checks/#no-articles-kv-cache-2: /checks/ has no heading or anchor with id "no-articles-kv-cache-2"
templates/checks.html: error: broken link to /checks/#no-articles-kv-cache-3: /checks/ has no heading or anchor with id "no-articles-kv-cache-3" (and 8 more broken links of templates/checks.html in the output for /checks/)
EOF
}

# The default theme's menu (site.menu, ordered once per build): top-level
# sections by weight, then title; a nested section is not in it. An edited
# title or weight reorders it on every page, in an incremental build as in a
# full one.
# starter_site: a new project in $W from `kvsite new --lang en` (the default theme)
starter_site() {
    NCOPY=$((NCOPY + 1))
    W=$TMP/$NCOPY-$CASE/project
    mkdir -p "$(dirname "$W")"
    "$KVSITE" new "$W" --lang en >/dev/null 2>&1 || { fail "kvsite new failed"; return 1; }
}

nav_order() { # nav_order FILE: the menu's section paths, in order
    grep -o '<li><a href="/[a-z]*/"' "$W/$1" | sed 's/.*href="\(.*\)"/\1/' | tr '\n' ' '
}
t_theme_menu_order() {
    starter_site || return
    local d
    for d in zeta alpha; do
        mkdir -p "$W/content/$d/inner"
        printf -- '---\ntitle: %s\n---\n' "${d^}" >"$W/content/$d/_index.md"
        printf -- '---\ntitle: In %s\n---\nText.\n' "$d" >"$W/content/$d/page.md"
        printf -- '---\ntitle: Nested\nweight: -9\n---\n' >"$W/content/$d/inner/_index.md"
    done
    kv build
    expect_rc 0
    local got
    got=$(nav_order site/articles/first-figures/index.html)
    [ "$got" = "/alpha/ /articles/ /zeta/ /sources/ /checks/ " ] || fail "menu: $got"
    printf -- '---\ntitle: Zeta\nweight: -1\n---\n' >"$W/content/zeta/_index.md"
    sed -i 's/^title: Alpha$/title: Omega/' "$W/content/alpha/_index.md"
    kv build
    expect_rc 0
    got=$(nav_order site/alpha/page/index.html)
    [ "$got" = "/zeta/ /articles/ /alpha/ /sources/ /checks/ " ] || fail "menu after the edits: $got"
    expect_grep site/articles/first-figures/index.html '<li><a href="/alpha/">Omega</a>'
    same_as_full menu
}

# The default theme's menu shows 8 entries of site.menu at most: with 12
# sections, 7 and "More…" to the home page, which then lists them all with
# its pager; every page's header is the same size whatever the number of
# sections. params.menu_max raises the cap.
nav_links() { # nav_links FILE: every link of the menu, in order
    sed -n '/class="site-nav"/,/<\/nav>/p' "$W/$1" | grep -o 'href="[^"]*"' | sed 's/href="\(.*\)"/\1/' | tr '\n' ' '
}
t_theme_menu_capped() {
    starter_site || return
    local d
    for d in $(seq -w 1 11); do
        mkdir -p "$W/content/s$d"
        printf -- '---\ntitle: Section %s\nweight: %d\n---\n' "$d" "$((10#$d))" >"$W/content/s$d/_index.md"
        printf -- '---\ntitle: In %s\n---\nText.\n' "$d" >"$W/content/s$d/page.md"
    done
    kv build --strict
    expect_rc 0
    local got
    got=$(nav_links site/s11/page/index.html)
    [ "$got" = "/articles/ /s01/ /s02/ /s03/ /s04/ /s05/ /s06/ /#all-pages /sources/ /checks/ " ] ||
        fail "capped menu: $got"
    expect_grep site/index.html '<h2 id="all-pages">All pages</h2>'
    expect_grep site/index.html '<a href="/s09/">Section 09</a>'
    expect_file site/page/2/index.html
    expect_grep site/page/2/index.html '<h2 id="all-pages">All pages</h2>'
    expect_grep site/page/2/index.html '<a href="/s11/">Section 11</a>'
    printf 'params:\n  menu_max: 20\n' >>"$W/site.yaml"
    kv build --strict
    expect_rc 0
    got=$(nav_links site/s11/page/index.html)
    [ "$got" = "/articles/ /s01/ /s02/ /s03/ /s04/ /s05/ /s06/ /s07/ /s08/ /s09/ /s10/ /s11/ /sources/ /checks/ " ] ||
        fail "menu_max 20: $got"
    expect_no_grep site/index.html 'id="all-pages"'
    same_as_full menu
}

# The default theme renders its header once per place in the menu
# (include_cached, keyed by menu_key): with one worker rendering every page,
# each page of every kind still marks its own place and has its own body
# class; after a section's title changes (a record the menu read), an
# incremental build shows it everywhere and equals a full one.
nav_current() { # nav_current FILE: the menu items marked current
    grep -o '<li><a href="[^"]*" aria-current="page"' "$W/$1" | sed 's/.*href="\([^"]*\)".*/\1/' | tr '\n' ' '
}
t_theme_cached_header() {
    starter_site || return
    mkdir -p "$W/content/notes"
    printf -- '---\ntitle: Notes\n---\n' >"$W/content/notes/_index.md"
    printf -- '---\ntitle: A note\ntags: [x]\n---\nText.\n' >"$W/content/notes/a.md"
    kv build -j 1
    expect_rc 0
    local f want got
    for f in "index.html:" "notes/index.html:/notes/ " "notes/a/index.html:/notes/ " \
        "articles/first-figures/index.html:/articles/ " "checks/index.html:/checks/ " \
        "tags/x/index.html:" "sources/index.html:/sources/ "; do
        want=${f#*:}
        got=$(nav_current "site/${f%%:*}")
        [ "$got" = "$want" ] || fail "${f%%:*}: current items \"$got\", expected \"$want\""
    done
    expect_grep site/index.html '<body class="kind-home">'
    expect_grep site/index.html 'class="brand" href="/" aria-current="page"'
    expect_grep site/notes/index.html '<body class="kind-section">'
    expect_grep site/notes/a/index.html '<body class="kind-page">'
    expect_no_grep site/notes/a/index.html 'class="brand" href="/" aria-current'
    sed -i 's/^title: Notes$/title: Jottings/' "$W/content/notes/_index.md"
    kv build -j 1
    expect_rc 0
    expect_grep site/articles/first-figures/index.html '<li><a href="/notes/">Jottings</a>'
    expect_grep site/tags/x/index.html '<li><a href="/notes/">Jottings</a>'
    same_as_full header
}

# ---------- listings paginate (issue 17) ----------

# A starter site (the default theme) with 25 articles, each with a tag and
# a figure: paginate 10 splits every listing of them in three.
paginated_site() {
    starter_site || return 1
    local i
    for i in $(seq -w 1 25); do
        printf -- '---\ntitle: "Post %s"\ndate: 2026-02-%s\ntags: [many]\n---\nHalf: `50%% {= %d/(2*%d)}`.\n' \
            "$i" "$i" "$((10#$i))" "$((10#$i))" >"$W/content/articles/post-$i.md"
    done
    printf 'base_url: "https://example.org/"\npaginate: 10\n' >>"$W/site.yaml"
}

# listing_pages DIR N: the listing at site/DIR/ has pages 1 to N, no more
listing_pages() {
    local k
    expect_file "site/$1/index.html"
    for ((k = 2; k <= $2; k++)); do
        expect_file "site/$1/page/$k/index.html"
    done
    expect_no_file "site/$1/page/$(($2 + 1))/index.html"
}

t_paginate_listing_pages() {
    paginated_site || return
    kv build --strict
    expect_rc 0
    # 26 articles (the starter's and 25), newest first: 10, 10, 6
    listing_pages articles 3
    local n f u
    for f in site/articles/index.html site/articles/page/2/index.html; do
        n=$(grep -c 'class="pl-title"' "$W/$f")
        [ "$n" = 10 ] || fail "$f lists $n pages, not 10"
    done
    n=$(grep -c 'class="pl-title"' "$W/site/articles/page/3/index.html")
    [ "$n" = 6 ] || fail "page 3 lists $n pages, not 6"
    expect_grep site/articles/index.html 'Post 25<'
    expect_no_grep site/articles/index.html 'Post 15<'
    expect_grep site/articles/page/2/index.html 'Post 15<'
    # rel=prev/next in the head and in the pager; first and last
    expect_grep site/articles/index.html '<link rel="next" href="/articles/page/2/">'
    expect_no_grep site/articles/index.html 'rel="prev"'
    expect_grep site/articles/page/2/index.html '<link rel="prev" href="/articles/">'
    expect_grep site/articles/page/2/index.html '<link rel="next" href="/articles/page/3/">'
    expect_grep site/articles/page/2/index.html '<a href="/articles/page/3/" rel="next">'
    expect_grep site/articles/page/2/index.html '<a href="/articles/page/3/">Last</a>'
    expect_grep site/articles/page/3/index.html '<a href="/articles/">First</a>'
    expect_no_grep site/articles/page/3/index.html 'rel="next"'
    expect_grep site/articles/page/2/index.html 'Page 2 of 3'
    # a tag's page too: many has 25 pages
    expect_file site/tags/many/page/3/index.html
    expect_no_file site/tags/many/page/4/index.html
    # every page is in the sitemap
    for u in /articles/page/2/ /articles/page/3/ /tags/many/page/2/ /checks/page/2/; do
        expect_grep site/sitemap.xml "<loc>https://example.org$u</loc>"
    done
}

# The tag index paginates like the listings, paginate_tags a page (500 by
# default: the real site's 39 tags stay on one page): 25 tags and the
# starter's by 10 are three pages of page.terms, with rel=prev/next, in the
# sitemap; tags added later move the pages the way a full build does.
t_paginate_tag_index() {
    paginated_site || return
    local i n
    kv build --strict
    expect_rc 0
    expect_no_file site/tags/page/2/index.html
    printf 'paginate_tags: 10\n' >>"$W/site.yaml"
    for i in $(seq -w 1 25); do
        sed -i "s/^tags: \[many\]$/tags: [t$i]/" "$W/content/articles/post-$i.md"
    done
    kv build --strict
    expect_rc 0
    listing_pages tags 3
    n=$(grep -o '<li><a href="/tags/[^"]*/">#' "$W/site/tags/index.html" | wc -l)
    [ "$n" = 10 ] || fail "the tag index's first page lists $n tags, not 10"
    # the starter's own tags sort among t01..t25: 27 or more in all, the last page the rest
    n=$(grep -o '<li><a href="/tags/[^"]*/">#' "$W/site/tags/page/3/index.html" | wc -l)
    [ "$n" -ge 1 ] && [ "$n" -le 10 ] || fail "the tag index's last page lists $n tags"
    expect_grep site/tags/index.html '<link rel="next" href="/tags/page/2/">'
    expect_grep site/tags/page/2/index.html '<link rel="prev" href="/tags/">'
    expect_grep site/tags/page/2/index.html 'Page 2 of 3'
    expect_grep site/sitemap.xml '<loc>https://example.org/tags/page/3/</loc>'
    # every tag is on exactly one page of the index
    for i in $(seq -w 1 25); do
        n=$(cat "$W/site/tags/index.html" "$W"/site/tags/page/*/index.html | grep -c "href=\"/tags/t$i/\"")
        [ "$n" = 1 ] || fail "tag t$i is on $n pages of the index"
    done
    for i in $(seq 26 35); do
        printf -- '---\ntitle: "Extra %s"\ntags: [x%s]\n---\nText.\n' "$i" "$i" >"$W/content/articles/extra-$i.md"
    done
    kv build --strict
    expect_rc 0
    expect_file site/tags/page/4/index.html
    same_as_full tags
}

# The sources page paginates by key, paginate_sources a page (100 by
# default: the real site's sources stay on one page): 25 sources and the
# starter's by 10 are three pages of page.sources; a cited figure links to
# the page that lists its source, which names 20 citing pages and counts
# the rest; site.sources is a view (the menu reads its length on every page).
t_paginate_sources() {
    paginated_site || return
    local i n
    kv build --strict
    expect_rc 0
    expect_no_file site/sources/page/2/index.html
    expect_grep site/articles/first-figures/index.html 'href="/sources/#qwen25card"'
    printf 'paginate_sources: 10\n' >>"$W/site.yaml"
    for i in $(seq -w 1 25); do
        printf 'k%s:\n  title: "Source %s"\n  year: 2024\n' "$i" "$i" >>"$W/checks/sources.yaml"
        printf '\nCited: `7 GB {cite k25}`.\n' >>"$W/content/articles/post-$i.md"
    done
    kv build --strict
    expect_rc 0
    listing_pages sources 3
    # k01..k25 then qwen25card: 10, 10, 6
    n=$(grep -c '<li id="k[0-9]*" class="source">' "$W/site/sources/index.html")
    [ "$n" = 10 ] || fail "the sources page's first page lists $n entries, not 10"
    expect_grep site/sources/page/3/index.html '<li id="qwen25card" class="source">'
    expect_grep site/sources/page/3/index.html '<li id="k25" class="source">'
    expect_grep site/articles/first-figures/index.html 'href="/sources/page/3/#qwen25card"'
    expect_grep site/articles/post-07/index.html 'href="/sources/page/3/#k25"'
    expect_grep site/sources/page/2/index.html '<link rel="prev" href="/sources/">'
    expect_grep site/sources/page/2/index.html 'Page 2 of 3'
    expect_grep site/sources/page/3/index.html '<ol class="sources" start="21">'
    expect_grep site/sitemap.xml '<loc>https://example.org/sources/page/3/</loc>'
    # 25 pages cite k25: 20 named, the rest counted
    n=$(grep -A 3 'id="k25" class="source">' "$W/site/sources/page/3/index.html" |
        grep '<p class="source-by">' | grep -o '<a href="/articles/post-[0-9]*/">' | wc -l)
    [ "$n" = 20 ] || fail "k25's entry names $n citing pages, not 20"
    expect_grep site/sources/page/3/index.html ', and 5 more pages'
    # every source is on exactly one page
    for i in $(seq -w 1 25); do
        n=$(cat "$W/site/sources/index.html" "$W"/site/sources/page/*/index.html | grep -c "<li id=\"k$i\" class=\"source\">")
        [ "$n" = 1 ] || fail "source k$i is on $n pages of the sources page"
    done
    # sources added before the others move them, and the figures' links
    # with them: the incremental build writes what a full build writes
    for i in 1 2 3 4 5 6; do
        printf 'a0%s:\n  title: "First %s"\n' "$i" "$i" >>"$W/checks/sources.yaml"
    done
    kv build --strict
    expect_rc 0
    expect_grep site/articles/post-07/index.html 'href="/sources/page/4/#k25"'
    expect_grep site/sources/page/4/index.html '<li id="k25" class="source">'
    expect_grep site/sources/page/2/index.html '<li id="k10" class="source">'
    same_as_full sources
    printf 'paginate_sources: 0\n' >>"$W/site.yaml"
    kv build
    expect_rc 2
    grep -q '^site.yaml:[0-9]*:[0-9]*: error: .*paginate_sources' "$W.err" ||
        fail "no error for paginate_sources: 0: $(head -n 3 "$W.err")"
}

# The report lists the figures of 10 pages a page; a figure links to the
# report page that lists it, and that page has its row.
t_paginate_report_split() {
    paginated_site || return
    kv build --strict
    expect_rc 0
    expect_file site/checks/page/2/index.html
    expect_file site/checks/page/3/index.html
    local href id at
    href=$(grep -o 'href="/checks/[^"]*#[^"]*"' "$W/site/articles/post-25/index.html" | head -n 1)
    case $href in
        'href="/checks/page/'[23]'/#'*) ;;
        *) fail "post-25's figure links to ${href:-nothing}, not to a later report page"; return ;;
    esac
    id=${href#*#}
    id=${id%\"}
    at=${href#href=\"}
    at=${at%%#*}
    expect_grep "site${at}index.html" "id=\"$id\""
    expect_no_grep site/checks/index.html "id=\"$id\""
    expect_grep site/checks/index.html '<link rel="next" href="/checks/page/2/">'
}

# A report page comes in parts: part c lists figures 7c+1 .. 7c+7 of each of
# its pages (75 rows over the 10 pages it lists, paginate.h), so a page of 22 figures
# makes its report page four parts. A figure links to the part that lists
# it (the build's link check follows each link), every part is in the
# sitemap and links its neighbours, and an incremental build that adds or
# removes a part equals a full one.
many_figures() {
    local i
    {
        printf -- '---\ntitle: "Many"\ndate: 2026-03-01\n---\n'
        for i in $(seq 1 "$1"); do printf 'Figure %d is `%d {= %d}`.\n\n' "$i" "$i" "$i"; done
    } >"$W/content/articles/many.md"
}

t_report_parts() {
    paginated_site || return
    many_figures 22
    kv build --strict
    expect_rc 0
    local first p n f
    first=$(grep -o 'href="/checks/[^"#]*#articles-many-1"' "$W/site/articles/many/index.html" | head -n 1)
    p=${first#href=\"}
    p=${p%%#*}
    case $p in /checks/ | /checks/page/[0-9]/) ;; *) fail "figure 1 links to ${first:-nothing}"; return ;; esac
    expect_grep site/articles/many/index.html "href=\"${p}#articles-many-7\""
    expect_grep site/articles/many/index.html "href=\"${p}part/2/#articles-many-8\""
    expect_grep site/articles/many/index.html "href=\"${p}part/4/#articles-many-22\""
    expect_grep "site${p}index.html" 'id="articles-many-7"'
    expect_no_grep "site${p}index.html" 'id="articles-many-8"'
    expect_grep "site${p}part/2/index.html" 'id="articles-many-8"'
    expect_grep "site${p}part/4/index.html" 'id="articles-many-22"'
    expect_no_file "site${p}part/5/index.html"
    # the other pages of the block have one figure each: on part 1 only
    expect_no_grep "site${p}part/2/index.html" 'id="articles-post-'
    for n in 1 2 3 4; do
        f=site${p}index.html
        [ "$n" = 1 ] || f=site${p}part/$n/index.html
        [ "$(grep -c '<tr id="' "$W/$f")" -le 75 ] || fail "$f has more than 75 rows"
        expect_grep "$f" "Part $n of 4"
        [ "$n" = 1 ] || expect_grep site/sitemap.xml "<loc>https://example.org${p}part/$n/</loc>"
    done
    expect_grep "site${p}part/2/index.html" "<a href=\"${p}\" rel=\"prev\">"
    expect_grep "site${p}part/2/index.html" "<a href=\"${p}part/3/\" rel=\"next\">"
    expect_grep "site${p}part/2/index.html" 'figures 8 to 14 of each page'
    expect_grep "site${p}part/4/index.html" "<a href=\"${p}\">First part</a>"
    expect_no_grep "site${p}part/4/index.html" 'rel="next">Next part'
    same_as_full parts
    # one figure more: a fifth part, and nothing else but the page and its report
    many_figures 29
    kv build --strict
    expect_rc 0
    tail -n 1 "$W.err" | grep -q 'unchanged since the last build' || fail "not incremental: $(tail -n 1 "$W.err")"
    expect_grep "site${p}part/5/index.html" 'id="articles-many-29"'
    expect_grep "site${p}part/4/index.html" 'Part 4 of 5'
    same_as_full added
    # and fewer: the parts past the last go
    many_figures 8
    kv build --strict
    expect_rc 0
    expect_grep "site${p}part/2/index.html" 'id="articles-many-8"'
    expect_no_file "site${p}part/3/index.html"
    expect_no_file "site${p}part/5/index.html"
    same_as_full removed
}

# A part's report.figures counts the figures it lists, not all of its pages'.
t_report_parts_counts() {
    paginated_site || return
    many_figures 22
    mkdir -p "$W/templates"
    printf '<p>part {{ report.part.number }}: {{ report.figures.total }} {{ report.figures.computed }} {{ report.figures.failed }} {{ #report.figures.list }}</p>\n{%% for _, f in ipairs(report.figures.list) do %%}<p id="{{ f.anchor }}"></p>{%% end %%}\n' >"$W/templates/checks.html"
    kv build --strict
    expect_rc 0
    local p
    p=$(grep -o 'href="/checks/[^"#]*#articles-many-1"' "$W/site/articles/many/index.html" | head -n 1)
    p=${p#href=\"}
    p=${p%%#*}
    expect_grep "site${p}part/2/index.html" '<p>part 2: 7 7 0 7</p>'
    expect_grep "site${p}part/4/index.html" '<p>part 4: 1 1 0 1</p>'
}

# The parts' URLs are the report's, before anyone knows how many there are:
# a page there is refused.
t_report_parts_reserved() {
    paginated_site || return
    printf -- '---\ntitle: "Squatter"\n---\nHello.\n' | page content/checks/part/2.md
    kv build
    expect_rc 1
    grep -qF 'content/checks/part/2.md:1:1: error: would publish /checks/part/2/index.html where the parts of /checks/index.html may go, which kvsite writes (the checks report)' "$W.err" ||
        fail "no located error for a page among the report's parts: $(head -n 2 "$W.err")"
}

# paginate out of bounds, in site.yaml or a section's front matter: located errors.
t_paginate_bad_values() {
    paginated_site || return
    local v
    for v in 0 -1 1001 many; do
        sed -i '$d' "$W/site.yaml"
        printf 'paginate: %s\n' "$v" >>"$W/site.yaml"
        kv build
        expect_rc 2
        grep -qE "^site\.yaml:[0-9]+:1: error: paginate must be" "$W.err" ||
            fail "paginate: $v: no located error: $(head -n 2 "$W.err")"
    done
    sed -i '$d' "$W/site.yaml"
    printf -- '---\ntitle: "Articles"\npaginate: 0\n---\n' >"$W/content/articles/_index.md"
    kv build
    expect_rc 1
    grep -q '^content/articles/_index.md:3:11: error: paginate must be between 1 and 1000 entries per page, not 0' "$W.err" ||
        fail "no located error for the section's paginate: $(head -n 2 "$W.err")"
    printf -- '---\ntitle: "Articles"\npaginate: 5\n---\n' >"$W/content/articles/_index.md"
    kv build --strict
    expect_rc 0
    expect_file site/articles/page/6/index.html
    expect_no_file site/articles/page/7/index.html
}

# The helpers templates find things with: site.section, site.page,
# site.pages_by_tag, site.page_with_template, page.prev / page.next; the
# lists are read-only.
t_site_helpers() {
    good_built || return
    { cat "$W/templates/page.html"
      cat <<'EOF'
<p class="h-sec">{{ site.section("notes").title }}:{{ #site.section("notes").pages }}:{{ tostring(site.section("nope")) }}</p>
<p class="h-page">{{ site.page("content/notes/week-1.md").title }}|{{ site.page("/notes/week-1/").path }}|{{ tostring(site.page("/nope/")) }}</p>
<p class="h-tag">{{ #site.pages_by_tag("kv-cache") }}:{{ #site.pages_by_tag("no-such-tag") }}</p>
<p class="h-tpl">{{ tostring(site.page_with_template("nope.html")) }}</p>
<p class="h-nav">{{ page.prev and page.prev.title or "-" }}|{{ page.next and page.next.title or "-" }}</p>
<p class="h-ro">{{ tostring((pcall(function() site.pages[1] = 1 end))) }}{{ tostring((pcall(function() site.section("notes").pages[1] = 1 end))) }}</p>
EOF
    } >"$W/templates/page.html.new"
    mv "$W/templates/page.html.new" "$W/templates/page.html"
    kv build
    expect_rc 0
    grep -qE '<p class="h-sec">[^:<]+:[1-9][0-9]*:nil</p>' "$W/site/notes/week-1/index.html" ||
        fail "site.section: $(grep -o '<p class="h-sec">.*' "$W/site/notes/week-1/index.html")"
    expect_grep site/notes/week-1/index.html '<p class="h-page">Week 1|/notes/week-1/|nil</p>'
    grep -qE '<p class="h-tag">[1-9][0-9]*:0</p>' "$W/site/notes/week-1/index.html" ||
        fail "site.pages_by_tag: $(grep -o '<p class="h-tag">.*' "$W/site/notes/week-1/index.html")"
    expect_grep site/notes/week-1/index.html '<p class="h-tpl">nil</p>'
    expect_grep site/notes/week-1/index.html '<p class="h-ro">falsefalse</p>'
}

# The site's lists are the build's, shared by every page: a page cannot
# change them, nor keep one where the next page could reach it (their
# metatables are locked; a view read after its page ends fails, luaview.h).
t_site_views_kept() {
    good_built || return
    { cat <<'EOF'
<p>meta:{{ tostring(getmetatable(site.pages)) }}|{{ tostring(getmetatable(site.sections)) }}|{{ tostring(getmetatable(site.tags)) }}</p>
<p>keep:{{ tostring((pcall(function() getmetatable(site.pages).kept = site.sections end))) }}</p>
<p>set:{{ tostring((pcall(function() site.sections[1].pages[1] = 1 end))) }}|{{ tostring((pcall(function() site.tags[1] = 1 end))) }}</p>
EOF
      cat "$W/templates/page.html"; } >"$W/templates/page.html.new"
    mv "$W/templates/page.html.new" "$W/templates/page.html"
    kv build
    expect_rc 0
    expect_grep site/notes/week-1/index.html '<p>meta:locked|locked|locked</p>'
    expect_grep site/notes/week-1/index.html '<p>keep:false</p>'
    expect_grep site/notes/week-1/index.html '<p>set:false|false</p>'
}

# ---------- Markdown and code, search (issue 18) ----------

# A page's footnotes, aligned table and fenced code, as the site shows them:
# footnotes linked both ways, alignment without the obsolete align=, Lua
# highlighted in classes, a language kvsite does not know left plain.
t_md_page_markup() {
    good_built || return
    page content/notes/code.md <<'EOF'
---
title: Code
---
A claim.[^src]

| name | bytes |
|:-----|------:|
| k    | 2     |

```lua
local n = 2 -- <two>
```

```cobol
MOVE 1 TO X.
```

[^src]: Where it comes from.
EOF
    kv build
    expect_rc 0
    local f=$W/site/notes/code/index.html
    grep -qF '<sup class="footnote-ref"><a href="#fn-src" id="fnref-src" data-footnote-ref>1</a></sup>' "$f" ||
        fail "no footnote reference"
    grep -qF '<li id="fn-src">' "$f" || fail "no footnote"
    grep -qF '<a href="#fnref-src" class="footnote-backref"' "$f" || fail "no link back"
    grep -qF '<td style="text-align: right">2</td>' "$f" || fail "no right-aligned cell"
    local aligned
    aligned=$(grep -rl ' align=' "$W/site" --include='*.html')
    [ -z "$aligned" ] || fail "align= in $aligned"
    grep -qF '<pre tabindex="0"><code class="language-lua"><span class="hl-keyword">local</span> n = <span class="hl-constant">2</span> <span class="hl-comment">-- &lt;two&gt;</span>' "$f" ||
        fail "Lua not highlighted: $(grep -A1 'language-lua' "$f" | head -n 2)"
    grep -qF '<pre tabindex="0"><code class="language-cobol">MOVE 1 TO X.' "$f" || fail "unknown language not plain"
    # `kvsite render` prints what cmark-gfm prints (the spec compares with it)
    printf 'x[^1]\n\n[^1]: y\n\n```lua\nlocal a\n```\n' | (cd "$W" && "$KVSITE" render) >"$W.render"
    grep -q 'footnote\|hl-' "$W.render" && fail "kvsite render changed: $(cat "$W.render")"
}

# search: the Pagefind program the tests use (tools/npm, installed by make deps)
PAGEFIND=$ROOT/tools/npm/node_modules/.bin/pagefind

# search_on [PROGRAM]: turns search on in the project's site.yaml
search_on() {
    printf 'search:\n  enabled: true\n  pagefind: %s\n' "${1:-$PAGEFIND}" >>"$W/site.yaml"
}

# Search on: the index is made in the staging folder and published with the
# pages, in the same swap; a second build still has it; search off again
# and the next build's output has none.
t_search_on() {
    [ -x "$PAGEFIND" ] || { fail "no $PAGEFIND: run make deps"; return; }
    good_built || return
    search_on
    kv build
    expect_rc 0
    expect_summary "$SUMMARY_OK"
    expect_file site/pagefind/pagefind-entry.json
    expect_file site/pagefind/pagefind-ui.js
    grep -q ': warning:' "$W.err" && fail "warnings: $(head -n 2 "$W.err")"
    expect_no_staging
    kv build --no-cache
    expect_rc 0
    expect_file site/pagefind/pagefind-entry.json
    sed -i 's/enabled: true/enabled: false/' "$W/site.yaml"
    kv build
    expect_rc 0
    expect_no_file site/pagefind
}

# Search on without Pagefind: one warning, the site built without search.
t_search_missing() {
    good_built || return
    search_on tools/no-such-pagefind
    kv build
    expect_rc 0
    expect_diags <<'EOF'
site.yaml: warning: search.pagefind: @W@/tools/no-such-pagefind is not a program that can be run: the site is built without search
EOF
    expect_no_file site/pagefind
    sed -i '/^  pagefind:/d' "$W/site.yaml"
    PATH=/usr/bin:/bin kv build
    expect_rc 0
    expect_diags <<'EOF'
site.yaml: warning: search.enabled: no pagefind on PATH (nor search.pagefind): the site is built without search; `make deps` installs Pagefind under tools/npm
EOF
    expect_no_file site/pagefind
}

# Pagefind failing or too slow: a build error with what it printed; the
# output stays the previous build's.
t_search_fails() {
    good_built || return
    printf '#!/bin/sh\necho "Error: cannot read the site"\nexit 4\n' >"$W/pf-bad"
    printf '#!/bin/sh\necho indexing\nsleep 20\n' >"$W/pf-slow"
    chmod +x "$W/pf-bad" "$W/pf-slow"
    search_on pf-bad
    echo 'Changed.' >>"$W/content/notes/week-1.md"
    kv build
    expect_rc 1
    grep -qxF "kvsite: error: search: $W/pf-bad failed (exit status 4); it printed: Error: cannot read the site" "$W.err" ||
        fail "no error with Pagefind's output: $(head -n 3 "$W.err")"
    hashes "$W/site" >"$W.snap2"
    cmp -s "$W.snap" "$W.snap2" || fail "site/ changed although the build failed"
    expect_no_staging
    sed -i 's/pf-bad/pf-slow/' "$W/site.yaml"
    printf '  timeout: 1\n' >>"$W/site.yaml"
    kv build
    expect_rc 1
    grep -qF "did not finish in search.timeout (1 s); it printed: indexing" "$W.err" ||
        fail "no time-limit error: $(head -n 3 "$W.err")"
    hashes "$W/site" >"$W.snap2"
    cmp -s "$W.snap" "$W.snap2" || fail "site/ changed although the build failed"
}

# The default theme: the search box only with search on, hidden until the
# script fills it; articles are search results, the chrome is not.
t_search_theme() {
    [ -x "$PAGEFIND" ] || { fail "no $PAGEFIND: run make deps"; return; }
    NCOPY=$((NCOPY + 1))
    W=$TMP/$NCOPY-$CASE/blog
    mkdir -p "$(dirname "$W")"
    (cd "$(dirname "$W")" && "$KVSITE" new blog >/dev/null 2>&1) || { fail "kvsite new failed"; return; }
    kv build
    expect_rc 0
    grep -q 'id="search"' "$W/site/index.html" && fail "a search box with search off"
    search_on
    kv build
    expect_rc 0
    grep -qF '<div id="search" class="site-search" role="search" data-pagefind-ignore hidden></div>' "$W/site/index.html" ||
        fail "no hidden search box"
    expect_file site/assets/search.js
    grep -q '<article data-pagefind-body>' "$W/site/articles/first-figures/index.html" ||
        fail "the article is not marked for the index"
    grep -q 'data-pagefind-body' "$W/site/index.html" "$W/site/tags/index.html" && fail "chrome marked for the index"
    expect_file site/pagefind/pagefind-entry.json
}

# The bundled site: Pagefind's own search finds the right technique card
# first for Chinese terms, and never a tag page, a listing or the report.
t_search_bundled_ranking() {
    [ -x "$PAGEFIND" ] || { fail "no $PAGEFIND: run make deps"; return; }
    command -v node >/dev/null || { fail "no node: run make deps"; return; }
    NCOPY=$((NCOPY + 1))
    W=$TMP/$NCOPY-$CASE/project
    mkdir -p "$W"
    cp -R "$ROOT/content" "$ROOT/templates" "$ROOT/checks" "$ROOT/site.yaml" "$W/"
    sed -i "s|pagefind: .*|pagefind: $PAGEFIND|" "$W/site.yaml"
    kv build
    expect_rc 0
    (cd "$W" && timeout 60 node "$ROOT/tests/search/query.mjs" site 量化 潜向量 前缀缓存) >"$W.q" 2>&1 ||
        { fail "query.mjs failed: $(head -n 3 "$W.q")"; return; }
    grep -qP '^量化\t/techniques/(kivi|fp8)/ ' "$W.q" || fail "量化: $(grep '^量化' "$W.q")"
    grep -qP '^潜向量\t/techniques/mla/' "$W.q" || fail "潜向量: $(grep '^潜向量' "$W.q")"
    grep -qP '^前缀缓存\t/techniques/prefix-caching/' "$W.q" || fail "前缀缓存: $(grep '^前缀缓存' "$W.q")"
    grep -qP '/(tags|checks)/|\t/techniques/( |$)|\t/( |$)' "$W.q" &&
        fail "a tag page, the report or a listing found: $(cat "$W.q")"
}

# ---------- figures' details, report backlinks, absolute feed and sitemap (issue 18) ----------

# Every figure is a button with an id that opens its details (popover, no JavaScript),
# in the page's language, with a link to its report row; the report links back.
t_figure_details_popover() {
    W=$TMP/$((NCOPY += 1))-$CASE/zh
    mkdir -p "$(dirname "$W")"
    { "$KVSITE" new "$W" --lang zh >/dev/null 2>&1 && (cd "$W" && "$KVSITE" build --strict >"$W.out" 2>"$W.err"); } ||
        { fail "the zh starter does not build: $(tail -n 3 "$W.err" 2>/dev/null)"; return; }
    local a=site/articles/first-figures/index.html
    expect_grep $a '<span class="fig" id="articles-first-figures-1" data-tier="computed"><button type="button" class="fig-q" popovertarget="articles-first-figures-1-d" aria-describedby="articles-first-figures-1-d">'
    expect_grep $a '<span class="fig-pop" popover id="articles-first-figures-1-d"><span class="fig-tier">计算：'
    expect_grep $a '<span class="fig-k">表达式</span> <code>'
    expect_grep $a '<a class="fig-report" href="/checks/#articles-first-figures-1">核查报告里的这一行 →</a>'
    # the details are no longer a title attribute (never shown on touch or keyboard)
    ! grep -qE '<span class="fig"[^>]* title=' "$W/$a" || fail "a figure still has a title attribute"
    # the report row links back to the figure in its page
    expect_grep site/checks/index.html '<tr id="articles-first-figures-1" '
    expect_grep site/checks/index.html 'href="/articles/first-figures/#articles-first-figures-1"'
    # favicon and OpenGraph in the default theme
    expect_grep $a '<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">'
    expect_grep $a '<meta property="og:locale" content="zh_CN">'
    expect_file site/assets/favicon.svg
    # base_url unset: no sitemap, and no note about it
    expect_no_file site/sitemap.xml
    ! grep -q 'base_url' "$W.err" || fail "a note about base_url although site.yaml sets none"
}

# An absolute base_url: the sitemap's locations and the feed's ids are absolute URLs;
# an undated page's entry has the newest page's date, not 1970.
t_feed_sitemap_absolute() {
    fresh good
    printf -- '---\ntitle: Undated\n---\nNo date here.\n' | page content/articles/undated.md
    kv build
    expect_rc 0
    expect_grep site/feed.xml '<id>https://example.org/</id>'
    expect_grep site/feed.xml '<id>https://example.org/articles/kv-cache/</id>'
    expect_grep site/sitemap.xml '<url><loc>https://example.org/articles/undated/</loc></url>'
    expect_no_grep site/sitemap.xml '<loc>/'
    expect_no_grep site/feed.xml '1970-01-01'
    tr -d '\n' <"$W/site/feed.xml" | grep -q '<title>Undated</title>    <link href="https://example.org/articles/undated/"/>    <id>https://example.org/articles/undated/</id>    <updated>2026-01-15T00:00:00Z</updated>' ||
        fail "the undated entry does not carry the newest date"
}

# Past 50,000 pages (the sitemap protocol's limit a file) sitemap.xml is an
# index of sitemap1.xml, sitemap2.xml, each with its share of the pages, every
# page once; a file of content/ on a part's path is refused before anything
# renders, at the file. Tiny pages, the bare fixture's plain templates.
t_sitemap_parts() {
    fresh bare
    # 100,000 files: in memory where there is a tmpfs (ext4 makes creating that
    # many slow on a disk where as many were just deleted)
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then
        local shm
        shm=$(mktemp -d /dev/shm/kvsite-e2e.XXXXXX) || return
        SHM_DIRS="$SHM_DIRS $shm"
        cp -R "$W/." "$shm/" && rm -rf "$W" && ln -s "$shm" "$W"
    fi
    printf 'base_url: "https://example.org/"\n' >>"$W/site.yaml"
    mkdir -p "$W/content/many"
    printf -- '---\ntitle: Many\n---\n' >"$W/content/many/_index.md"
    awk -v d="$W/content/many" 'BEGIN { for (i = 0; i < 50000; i++) {
        f = sprintf("%s/p%05d.md", d, i); printf "---\ntitle: P%d\n---\nx\n", i >f; close(f) } }'
    { (cd "$W" && exec timeout -k 5 600 "$KVSITE" build -j 2) >"$W.out" 2>"$W.err"; RC=$?; }
    expect_rc 0
    expect_grep site/sitemap.xml '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    expect_grep site/sitemap.xml '<sitemap><loc>https://example.org/sitemap2.xml</loc></sitemap>'
    expect_no_grep site/sitemap.xml 'sitemap3.xml'
    local n1 n2 all
    n1=$(grep -c '<url>' "$W/site/sitemap1.xml")
    n2=$(grep -c '<url>' "$W/site/sitemap2.xml")
    [ "$n1" = 50000 ] || fail "sitemap1.xml lists $n1 pages, not 50000"
    all=$(find "$W/site" -name index.html | wc -l)
    [ $((n1 + n2)) = "$all" ] || fail "the parts list $((n1 + n2)) pages of $all"
    all=$(cat "$W/site/sitemap1.xml" "$W/site/sitemap2.xml" | grep -o '<loc>[^<]*</loc>' | sort | uniq -d | wc -l)
    [ "$all" = 0 ] || fail "$all pages are in both parts"
    # fewer pages again: one sitemap, the parts gone (an incremental build)
    rm "$W"/content/many/p0*.md
    { (cd "$W" && exec timeout -k 5 600 "$KVSITE" build -j 2) >"$W.out" 2>"$W.err"; RC=$?; }
    expect_rc 0
    expect_grep site/sitemap.xml '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    expect_no_file site/sitemap1.xml
    expect_no_file site/sitemap2.xml
    # a file of content/ where a part goes
    for i in 0 1 2 3 4 5; do # 60,000 pages
        awk -v d="$W/content/many" -v k="$i" 'BEGIN { for (i = 0; i < 10000; i++) {
            f = sprintf("%s/p%d%04d.md", d, k, i); printf "---\ntitle: P\n---\nx\n" >f; close(f) } }'
    done
    printf 'not a sitemap\n' >"$W/content/sitemap1.xml"
    { (cd "$W" && exec timeout -k 5 600 "$KVSITE" build -j 2) >"$W.out" 2>"$W.err"; RC=$?; }
    expect_rc 1
    grep -q 'content/sitemap1.xml.*part 1 of the sitemap' "$W.err" ||
        fail "no collision with the sitemap's part: $(head -c 300 "$W.err")"
}

# base_url set to a path: no sitemap.xml (the protocol wants absolute URLs), and a note
# at the key says why; the build still succeeds.
t_base_url_path_note() {
    fresh bare
    printf 'base_url: "/docs/"\n' >>"$W/site.yaml"
    printf 'Plain page.\n' | fig_page f
    kv build --strict
    expect_rc 0
    expect_diags <<'EOF'
site.yaml:8:1: note: base_url "/docs/" has no host, so sitemap.xml is not written and feed.xml's ids are not absolute URLs: set base_url to "https://host/..."
EOF
    expect_no_file site/sitemap.xml
    expect_file site/feed.xml
}

# ---------- refuted claims, check --fix, check --diff (issue 20) ----------

# A refuted claim that is wrong passes, struck through with the true value
# beside it, counted as its own tier in the summary, checks.json and the
# report; strict mode does not count it as unverified.
t_refuted_wrong_claim_passes() {
    fresh good
    page content/notes/claims.md <<'EOF'
---
title: Claims
---
The post says `40 GB {≠ 40 * 2^30}` and `41 GB {!= 40 * 2^30; cite paper2024}`,
roughly `30 GB {≉ 40 * 2^30}` or `35 GB {!~ 40 * 2^30}`; it is `40 GiB {= 40 * 2^30}`.
EOF
    kv build --strict
    expect_rc 0
    expect_summary '^kvsite: built 6 pages, 16 figures \(10 computed, 1 measured, 1 cited, 4 refuted\), 0 warnings, 0 errors in [0-9.]+ s$'
    expect_grep site/notes/claims/index.html '<span class="fig" id="notes-claims-1" data-tier="refuted"><button type="button" class="fig-q" popovertarget="notes-claims-1-d" aria-describedby="notes-claims-1-d"><s>40 GB</s></button><span class="fig-true"> → 43 GB</span><span class="fig-pop" popover id="notes-claims-1-d">'
    expect_grep site/notes/claims/index.html '</span> claimed in paper2024: A paper about caches</span>'
    expect_grep site/checks.json '"tier": "refuted", "status": "pass"'
    expect_grep site/checks.json '"cited": 1, "refuted": 4, "passed": 16, "failed": 0}'
    expect_grep site/checks.json '"provenance": "claimed in paper2024: A paper about caches"'
}

# A refuted claim that is right fails at its line:col, exactly and
# approximately, in Unicode and ASCII; an unknown source fails too.
t_refuted_right_claim_fails() {
    good_built || return
    page content/notes/claims.md <<'EOF'
---
title: Claims
---
The post says `40 GiB {≠ 40 * 2^30}`, and
`42 GB {!~ 40 * 2^30}` and `41 GB {!= 40 * 2^30; cite nokey}`.
EOF
    kv build
    expect_failed_build <<'EOF'
content/notes/claims.md:4:16: error: quoted 40 GiB and it matches: the claim is right (40 * 2^30 = 42,949,672,960 B = 40.0 GiB)
content/notes/claims.md:5:2: error: quoted 42 GB and it matches within 5%: the claim is right (40 * 2^30 = 42,949,672,960 B = 42.9 GB)
content/notes/claims.md:5:29: error: cited source "nokey" is not in checks/sources.yaml
EOF
}

# The default theme counts refuted claims on the page and in the report.
t_refuted_default_theme() {
    fresh bare
    rm -rf "$W/templates"
    page content/notes/a.md <<'EOF'
---
title: A
---
The post says `40 GB {≠ 40 * 2^30}`; it is `40 GiB {= 40 * 2^30}`.
EOF
    kv build
    expect_rc 0
    expect_grep site/notes/a/index.html '<span class="tier-text" data-tier="refuted">refuted 1</span>'
    expect_grep site/checks/index.html '<li data-tier="refuted" title="a claim shown wrong: struck through, the computed value beside it">refuted 1</li>'
}

# --fix: in a git checkout, the failing exact quotes are rewritten with the
# computed value as each quote writes its number; after it the build passes
# and `git diff` shows only the quotes (the --dry-run diff, exactly).
t_fix_round_trip() {
    fresh good
    page content/notes/wrong.md <<'EOF'
---
title: Wrong
---
Qwen at 4K: `234,800,000 B {= 2*28*4*128*4096*2}`, `220 MiB {= 2*28*4*128*4096*2}`,
or `0.20 GiB {= 2*28*4*128*4096*2}`; with thin spaces `234 800 000 B {= 2*28*4*128*4096*2}`.
Right ones stay: `224 MiB {= 2*28*4*128*4096*2}`, `42.9 GB {≈ 40 * 2^30}`, `40 GB {≠ 40 * 2^30}`.
Share `28.1% {= 0.2852}`, twice `1 B {= 2}` and `1 B {= 2}`, ratio `1.5× {= 7.03125}`.
EOF
    (cd "$W" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm base) ||
        { fail "git init failed"; return; }
    kv check --fix --dry-run
    expect_rc 0
    cp "$W.out" "$W.dry"
    cat >"$W.want" <<'EOF'
--- a/content/notes/wrong.md
+++ b/content/notes/wrong.md
@@ -1,7 +1,7 @@
 ---
 title: Wrong
 ---
-Qwen at 4K: `234,800,000 B {= 2*28*4*128*4096*2}`, `220 MiB {= 2*28*4*128*4096*2}`,
-or `0.20 GiB {= 2*28*4*128*4096*2}`; with thin spaces `234 800 000 B {= 2*28*4*128*4096*2}`.
+Qwen at 4K: `234,881,024 B {= 2*28*4*128*4096*2}`, `224 MiB {= 2*28*4*128*4096*2}`,
+or `0.22 GiB {= 2*28*4*128*4096*2}`; with thin spaces `234 881 024 B {= 2*28*4*128*4096*2}`.
 Right ones stay: `224 MiB {= 2*28*4*128*4096*2}`, `42.9 GB {≈ 40 * 2^30}`, `40 GB {≠ 40 * 2^30}`.
-Share `28.1% {= 0.2852}`, twice `1 B {= 2}` and `1 B {= 2}`, ratio `1.5× {= 7.03125}`.
+Share `28.5% {= 0.2852}`, twice `2 B {= 2}` and `2 B {= 2}`, ratio `7.0× {= 7.03125}`.
EOF
    show_diff "dry-run diff" "$W.want" "$W.dry"
    [ -z "$(cd "$W" && git status --porcelain)" ] || fail "--dry-run wrote something"
    kv check --fix
    expect_rc 0
    cat >"$W.want" <<'EOF'
content/notes/wrong.md:4:14: fixed: 234,800,000 B -> 234,881,024 B
content/notes/wrong.md:4:53: fixed: 220 MiB -> 224 MiB
content/notes/wrong.md:5:5: fixed: 0.20 GiB -> 0.22 GiB
content/notes/wrong.md:5:56: fixed: 234 800 000 B -> 234 881 024 B
content/notes/wrong.md:7:8: fixed: 28.1% -> 28.5%
content/notes/wrong.md:7:34: fixed: 1 B -> 2 B
content/notes/wrong.md:7:50: fixed: 1 B -> 2 B
content/notes/wrong.md:7:69: fixed: 1.5× -> 7.0×
EOF
    show_diff "fixed lines" "$W.want" "$W.out"
    grep -q '^kvsite: check --fix: 8 quotes in 1 file fixed, 0 errors left$' "$W.err" ||
        fail "no fix summary: $(tail -n 1 "$W.err")"
    (cd "$W" && git diff --no-color --no-ext-diff) | sed -n '/^--- /,$p' >"$W.gitdiff"
    show_diff "git diff after --fix" "$W.dry" "$W.gitdiff"
    [ "$(cd "$W" && git status --porcelain)" = " M content/notes/wrong.md" ] ||
        fail "--fix changed other files: $(cd "$W" && git status --porcelain | head -n 3)"
    kv build
    expect_rc 0
    expect_summary '^kvsite: built 6 pages, 22 figures \(19 computed, 1 measured, 1 cited, 1 refuted\), 0 warnings, 0 errors in [0-9.]+ s$'
}

# --fix never touches refuted, cited or approximate quotes, says why, and
# exits 1 while errors are left; the file keeps its mode; nothing is left
# beside it.
t_fix_leaves_other_quotes() {
    fresh good
    page content/notes/wrong.md <<'EOF'
---
title: Wrong
---
`1 B {= 2}`
`40 GiB {≠ 40 * 2^30}`
`46 GB {≈ 40 * 2^30}`
`9× {cite nokey}`
EOF
    chmod 640 "$W/content/notes/wrong.md"
    kv check --fix
    expect_rc 1
    echo 'content/notes/wrong.md:4:2: fixed: 1 B -> 2 B' >"$W.want"
    show_diff "fixed lines" "$W.want" "$W.out"
    grep -q '^content/notes/wrong.md:5:2: not fixed: a refuted claim$' "$W.err" || fail "no note for the refuted claim"
    grep -q '^content/notes/wrong.md:6:2: not fixed: not an exact quote$' "$W.err" || fail "no note for the approximate quote"
    grep -q '^content/notes/wrong.md:7:2: not fixed: a cited figure$' "$W.err" || fail "no note for the cited figure"
    grep -q '^kvsite: check --fix: 1 quote in 1 file fixed, 3 errors left$' "$W.err" || fail "summary: $(tail -n 1 "$W.err")"
    printf -- '---\ntitle: Wrong\n---\n`2 B {= 2}`\n`40 GiB {≠ 40 * 2^30}`\n`46 GB {≈ 40 * 2^30}`\n`9× {cite nokey}`\n' >"$W.want"
    show_diff "the page" "$W.want" "$W/content/notes/wrong.md"
    [ "$(stat -c %a "$W/content/notes/wrong.md")" = 640 ] || fail "mode not kept"
    [ -z "$(find "$W/content" -name '.kvsite-fix*')" ] || fail "temporary file left"
}

# A tree with a parse error is refused whole: exit 2, nothing written.
t_fix_refuses_parse_error() {
    fresh good
    page content/notes/wrong.md <<'EOF'
---
title: Wrong
---
`1 B {= 2}`
EOF
    printf -- '---\ntitle: [unclosed\n---\nBody.\n' | page content/notes/broken.md
    hashes "$W/content" >"$W.before"
    kv check --fix
    expect_rc 2
    grep -q '^kvsite: check --fix: refused, nothing written: 1 error is not about a figure.s value (the first: content/notes/broken.md:' "$W.err" ||
        fail "no refusal: $(tail -n 1 "$W.err")"
    hashes "$W/content" >"$W.after"
    cmp -s "$W.before" "$W.after" || fail "content changed"
    kv check --dry-run
    expect_rc 2
    kv build --fix
    expect_rc 2
}

# --diff after a change to a model preset: every figure it moves, matched
# across versions although the lines moved, a summary, and annotations
# under GitHub Actions.
t_diff_preset_change() {
    fresh good
    cat >"$W/checks/presets.lua" <<'EOF'
return {qwen = {layers = 28, kv_heads = 4, head_dim = 128}}
EOF
    page content/notes/sizes.md <<'EOF'
---
title: Sizes
---
```{lua}
local p = require("presets").qwen
function kvb(t) return 2 * p.layers * p.kv_heads * p.head_dim * t * 2 end
```
At 4K `224 MiB {= kvb(4096)}`, at 32K `1.75 GiB {= kvb(32768)}`; one token `{lua} kvb(1)` bytes.
The window `4096 {= 4096}` stays.
EOF
    kv build
    expect_rc 0
    cp "$W/site/checks.json" "$W.old.json"
    sed -i 's/layers = 28/layers = 29/' "$W/checks/presets.lua"
    sed -i 's/^title: Sizes$/title: Sizes\nsummary: moved/' "$W/content/notes/sizes.md"
    kv check --diff site
    expect_rc 1
    cat >"$W.want" <<'EOF'
content/notes/sizes.md:9:8: 224 MiB -> 232 MiB (kvb(4096)); pass -> fail
content/notes/sizes.md:9:40: 1.75 GiB -> 1.81 GiB (kvb(32768)); pass -> fail
EOF
    show_diff "diff lines" "$W.want" "$W.out"
    grep -q '^kvsite: check --diff: 2 figures changed (2 values, 2 statuses, 0 tiers), 0 new, 0 removed, 12 unchanged since site/checks.json$' "$W.err" ||
        fail "summary: $(tail -n 1 "$W.err")"
    GITHUB_ACTIONS=true kv check --diff "$W.old.json"
    grep -q '^::warning file=content/notes/sizes.md,line=9,col=8::224 MiB -> 232 MiB (kvb(4096)); pass -> fail$' "$W.out" ||
        fail "no annotation: $(head -n 2 "$W.out")"
    echo '{"figures": 3}' >"$W.bad.json"
    kv check --diff "$W.bad.json"
    expect_rc 2
    kv check --diff "$W/nowhere"
    expect_rc 2
}

# ---------- issue 20: generated tables, hints that blame the right side, columns ----------

# A {lua} block with --| output: asis prints a table whose figures are verified like typed
# ones (computed tier, in the report), rendered in the block's place; headings and links in
# the output are the page's.
t_i20_asis_table() {
    fresh bare
    fig_page t <<'EOF'
```{lua}
--| output: asis
kv = require "kv"
print("| tokens | KV cache |")
print("|---:|---:|")
for _, r in ipairs{{4096, "224 MiB"}, {32768, "1.75 GiB"}} do
  print(("| %d | `%s {= kv.bytes(kv.model(\"qwen2.5-7b\"), %d)}` |"):format(r[1], r[2], r[1]))
end
print("\n## 生成的标题")
```

See [the heading](#生成的标题).
EOF
    fig_expect_pass
    expect_grep site/t/index.html '<td style="text-align: right"><span class="fig" id="t-2" data-tier="computed"><button type="button" class="fig-q" popovertarget="t-2-d" aria-describedby="t-2-d">1.75 GiB</button>'
    expect_grep site/t/index.html '<code>kv.bytes(kv.model(&quot;qwen2.5-7b&quot;), 32768)</code></span><span class="fig-row"><span class="fig-k">Value</span> 1,879,048,192 B = 1.750 GiB</span>'
    expect_grep site/t/index.html '<h2 id="生成的标题">生成的标题<a class="anchor" href="#生成的标题"'
    expect_no_grep site/t/index.html 'print('
    expect_grep site/checks.json '"quote": "1.75 GiB"'
}

# A wrong figure in the output fails at the block's line, saying so; prose numbers in the
# output are linted too; a block's output cannot hold {lua} blocks.
t_i20_asis_wrong_figure() {
    fresh bare
    fig_page t <<'EOF'
Intro.

  ```{lua}
  --| output: asis
  for i, q in ipairs{"2 KiB", "3 KiB"} do print(("- `%s {= %d * 1024}`"):format(q, i + 2)) end
  print("- about 9 GB by hand")
  print("```{lua}\nx = 1\n```")
  ```
EOF
    fig_expect_fail <<'EOF'
content/t.md:6:3: error: quoted 2 KiB, but 3 * 1024 = 3.00 KiB (in the output of the {lua} block)
content/t.md:6:3: error: quoted 3 KiB, but 4 * 1024 = 4.00 KiB (in the output of the {lua} block)
content/t.md:6:3: warning: unverified figure "9 GB": quote it as a figure (`9 GB {= EXPR}`) or cite it (`9 GB {cite KEY}`) (in the output of the {lua} block)
content/t.md:6:3: error: the output of a {lua} block with output: asis cannot hold {lua} blocks (in the output of the {lua} block)
EOF
}

# Each hint of quote.c, and the Lua side: an undefined variable named, a missing data
# file at the page's line (not checks/meas.lua's).
t_i20_hints() {
    fresh bare
    fig_page h <<'EOF'
```{lua}
kv, meas = require "kv", require "meas"
q = kv.model("qwen2.5-7b")
```

- K and V: `112 MiB {= kv.bytes(q, 4096)}`
- percent: `0.281% {= 0.281}`
- rounding: `12.2 GiB {= 12.25 * 2^30}`
- separator: `12.544 MiB {= 12544 * 2^20}`
- unit: `40 GB {= 40 * 2^30}`
- undefined: `224 MiB {= kv.bytes(qwen, 4096)}`
- data: `1 {= meas.value("measurements/none.yaml", "kv", {n = 1})}`
EOF
    fig_expect_fail <<'EOF'
content/h.md:9:13: error: quoted 112 MiB, but kv.bytes(q, 4096) = 224.00 MiB; the value is 2× the quote: the quote may miss K or V, or the expression counts them twice
content/h.md:10:13: error: quoted 0.281%, but 0.281 = 28.10000%; did you mean 28.1%?
content/h.md:11:14: error: quoted 12.2 GiB, but 12.25 * 2^30 = 12.250 GiB; rounds to 12.3 GiB (half away from zero)
content/h.md:12:15: error: quoted 12.544 MiB, but 12544 * 2^20 = 12,544.00000 MiB; did you mean 12,544 MiB? "." is the decimal point; thousands are grouped with "," or a thin space
content/h.md:13:10: error: quoted 40 GB, but 40 * 2^30 = 42.95 GB (40.00 GiB); did you mean GiB?
content/h.md:14:15: error: in figure: expected a model (kv.model ...) or a preset id, got nil (`qwen` is not defined on this page)
content/h.md:15:10: error: in figure: data "measurements/none.yaml": no such file under checks/ nor in the checks library
EOF
}

# A failed block is one error; the figures that need what it did not define are reported
# once, as depending on it; a figure that does not need it is checked as usual.
t_i20_failed_block_once() {
    fresh bare
    fig_page f <<'EOF'
```{lua}
kv = require "kv"
m = kv.model("no-such-model")
```

- `224 MiB {= kv.bytes(m, 4096)}`
- `448 MiB {= kv.bytes(m, 8192)}`
- `{lua} m.layers`
- `5 {= 2 + 2}`

```{lua}
x = m.layers
```
EOF
    kv build
    expect_rc 1
    grep -q '^content/f.md:6: error: in {lua} block: unknown model "no-such-model"' "$W.err" || fail "no error at the block: $(head -n 1 "$W.err")"
    grep -q '^content/f.md:9:4: error: in figure: `m` is not defined: it depends on the {lua} block at line 4, which failed' "$W.err" ||
        fail "the first dependent figure is not blamed on the block"
    grep -q '^content/f.md:12:4: error: quoted 5, but 2 + 2 = 4.00$' "$W.err" || fail "an independent figure was not checked"
    [ "$(grep -c ': error: ' "$W.err")" -eq 3 ] || fail "expected 3 errors, got: $(grep ': error: ' "$W.err")"
}

# Columns count code points, as editors do, in the log and in GitHub annotations.
t_i20_cjk_column() {
    fresh bare
    fig_page z <<'EOF'
一个公式，五个因子：键值缓存的大小是 `5 MiB {= 4 * 2^20}`，约 4 GB 的数字没有核对。
EOF
    GITHUB_ACTIONS=true kv build
    expect_rc 1
    sed '$d' "$W.err" >"$W.got"
    cat >"$W.want" <<'EOF'
content/z.md:4:21: error: quoted 5 MiB, but 4 * 2^20 = 4.00 MiB
content/z.md:4:43: warning: unverified figure "4 GB": quote it as a figure (`4 GB {= EXPR}`) or cite it (`4 GB {cite KEY}`)
::error file=content/z.md,line=4,col=21::quoted 5 MiB, but 4 * 2^20 = 4.00 MiB
::warning file=content/z.md,line=4,col=43::unverified figure "4 GB": quote it as a figure (`4 GB {= EXPR}`) or cite it (`4 GB {cite KEY}`)
EOF
    show_diff "diagnostics" "$W.want" "$W.got"
}

# A broken template is one error, with how many pages it broke and the tag's column.
t_i20_template_once() {
    good_built || return
    sed -i 's|<h1>{{ page.title }}</h1>|<h1>{{ page.title }} {{ (( }}</h1>|' "$W/templates/page.html"
    kv build
    expect_failed_build <<'EOF'
templates/page.html:5:5: error: unexpected symbol near ')' (broke 2 pages)
EOF
}

# ---------- one rule (issue 13): figures, expect, units and data() share C's code ----------

# A project with the real checks library, the good fixture's templates and a home page.
one_rule_project() {
    NCOPY=$((NCOPY + 1))
    W=$TMP/$NCOPY-$CASE/project
    mkdir -p "$W/content"
    cp -R "$ROOT/checks" "$W/checks"
    cp -R "$FIX/good/templates" "$W/templates"
    printf 'title: One rule\n' >"$W/site.yaml"
    printf -- '---\ntitle: Home\ntags: [one]\n---\n' >"$W/content/_index.md"
}

# Every (value, quote) pair goes through the figure path (`Q {= V}` on line N) and through
# expect.quote in a {lua} block (which prints "case N pass|fail"); the verdicts must agree.
t_one_quote_rule() {
    one_rule_project
    local cases=(
        '234881024|224 MiB' '234881024|224.0 MiB' '234881024|234,881,024 B' '234881024|224 MB'
        '234881024|235 MB' '0.531|53.1%' '0.53125|53.1%' '0.125|13%' '0.125|12%' '-0.125|-13%'
        '-5|−5' '-5|-5' '1.005|1.01' '1.005|1.00' '0.0625 * 2^30|0.06 GiB' '2.675|2.68'
        '123.4|1,23.4' '1234.5|1,234.5' '1234.5|1 234.5' '1234.5|1 234.5' '12544 * 2^20|12 544 MiB'
        '7|7×' '7|7x' '7|7倍' '7|7' '1|8 bits' '1|8 bit' '40 * 2^30|40 GB' '40 * 2^30|~40 GB'
        '40 * 2^30|≈43 GB' '40 * 2^30|约 43 GB' '40 * 2^30|~40 GiB' '0.5|~52%' '4096|4,096 tok'
        '8192|2 page' '8192|2 pages' '1|1 furlong' '1|about 1' '1|,1' '1|01' '1e300|1e300'
        '0|0' '0|-0' '1/3|0.333' '1/3|0.3333' '2/3|0.667' '2/3|0.666' '999.95|1,000.0' '999.95|999.9'
    )
    local lua_cases="" n=0 line c
    for c in "${cases[@]}"; do
        n=$((n + 1))
        lua_cases+="  {${c%%|*}, \"${c#*|}\"},"$'\n'
    done
    {
        printf -- '---\ntitle: Agree\n---\n\n```{lua}\nkvsite.unit("tok", 1, "count")\nkvsite.unit("page", 4096, "bytes")\n'
        printf 'local expect = require "expect"\nlocal cases = {\n%s}\n' "$lua_cases"
        printf 'for i, c in ipairs(cases) do\n  print(("case %%d %%s"):format(i, pcall(expect.quote, c[1], c[2]) and "pass" or "fail"))\nend\n```\n\n'
        for c in "${cases[@]}"; do printf -- '- `%s {= %s}`\n' "${c#*|}" "${c%%|*}"; done
    } >"$W/content/agree.md"
    kv check
    # case i is the figure on line FIRST + i - 1
    local first i fig lua mismatches=""
    first=$(grep -n '^- `' "$W/content/agree.md" | head -n 1 | cut -d: -f1)
    for ((i = 1; i <= n; i++)); do
        line=$((first + i - 1))
        if grep -q "^content/agree.md:$line:[0-9]*: error:" "$W.err"; then fig=fail; else fig=pass; fi
        lua=$(grep -oE "note: print: case $i (pass|fail)\$" "$W.err" | awk '{print $5}')
        [ "$fig" = "$lua" ] || mismatches+=" [${cases[$((i - 1))]}: figure $fig, expect ${lua:-none}]"
    done
    [ -z "$mismatches" ] || fail "verdicts differ:$mismatches"
    # the list exercises both verdicts
    grep -q "note: print: case 1 pass" "$W.err" || fail "case 1 should pass"
    grep -q "note: print: case 4 fail" "$W.err" || fail "case 4 should fail"
}

# Every unit name goes through the quote parser, units.factor/units.to and the prose lint:
# a unit the parser knows is one units.lua knows (page units included), and the lint flags
# prose numbers in exactly the built-in byte, percent and ratio units.
t_one_unit_table() {
    one_rule_project
    local names=(B KB kB MB GB TB KiB MiB GiB TiB bit bits % × 倍 tok page Gb gib furlong)
    local u
    {
        printf -- '---\ntitle: Units\n---\n\n```{lua}\nkvsite.unit("tok", 1, "count")\nkvsite.unit("page", 4096, "bytes")\n'
        printf 'units = require "units"\nfor _, u in ipairs{'
        for u in "${names[@]}"; do printf '"%s", ' "$u"; done
        printf '} do\n  local f = units.factor(u)\n  print(("unit %%s %%s"):format(u, f and (pcall(units.to, 1, u) and "known" or "broken") or "unknown"))\nend\n```\n\n'
        for u in "${names[@]}"; do printf -- '- unit %s: `3 %s {= 3 * (units.factor("%s") or 1)}`\n' "$u" "$u" "$u"; done
        printf '\n'
        for u in "${names[@]}"; do printf -- '- prose %s: 3 %s here\n\n' "$u" "$u"; done
    } >"$W/content/units.md"
    # --strict: the lint's findings are errors then, every one listed (as
    # warnings, a page's past the first ten are counted in one)
    kv check --strict
    local line lua fig lint want_lint
    for u in "${names[@]}"; do
        lua=$(grep -oE "note: print: unit $u (known|unknown|broken)\$" "$W.err" | awk '{print $5}')
        line=$(grep -n "^- unit $u:" "$W/content/units.md" | cut -d: -f1)
        if grep -q "^content/units.md:$line:[0-9]*: error:" "$W.err"; then fig=unknown; else fig=known; fi
        [ "$lua" = "$fig" ] || fail "unit $u: the quote parser says $fig, units.lua says ${lua:-nothing}"
        line=$(grep -n "^- prose $u:" "$W/content/units.md" | cut -d: -f1)
        if grep -q "^content/units.md:$line:[0-9]*: error: unverified" "$W.err"; then lint=yes; else lint=no; fi
        case $u in B|KB|kB|MB|GB|TB|KiB|MiB|GiB|TiB|bit|bits|%|×|倍) want_lint=yes ;; *) want_lint=no ;; esac
        [ "$lint" = "$want_lint" ] || fail "prose '3 $u': the lint flagged=$lint, expected $want_lint"
    done
}

# data() and the json/csv modules of the log parsers read the same text into the same tables.
t_one_data_reader() {
    one_rule_project
    printf '[{"n": 4096, "kv": 224.0, "name": "a", "ok": true, "x": null},\n {"n": 16384, "list": [1, null, "s"], "deep": {"k": -1e3}}]\n' >"$W/checks/d.json"
    cp "$W/checks/d.json" "$W/checks/d_json.txt"
    printf '# provenance\nn,kv,name,ok,empty\n4096,224.0,a,true,\n"16384",0x10,"b, c",False,~\n' >"$W/checks/d.csv"
    cp "$W/checks/d.csv" "$W/checks/d_csv.txt"
    page content/data.md <<'EOF'
---
title: Data
tags: [one]
---

```{lua}
local json, csv = require "json", require "csv"
local function same(a, b, path)
  if type(a) ~= type(b) or math.type(a) ~= math.type(b) then
    error(("%s: %s %s vs %s %s"):format(path, type(a), tostring(a), type(b), tostring(b)))
  end
  if type(a) ~= "table" then
    if a ~= b then error(("%s: %s vs %s"):format(path, tostring(a), tostring(b))) end
    return
  end
  for k, v in pairs(a) do same(v, b[k], path .. "." .. tostring(k)) end
  for k in pairs(b) do if a[k] == nil then error(path .. "." .. tostring(k) .. " only on one side") end end
end
same(data "d.json", json.decode(data "d_json.txt"), "json")
local rows = csv.records(data "d_csv.txt")
for _, r in ipairs(rows) do r.line = nil end
same(data "d.csv", rows, "csv")
print("data agrees")
```
EOF
    kv check
    expect_rc 0
    grep -q "note: print: data agrees" "$W.err" || fail "data() and json/csv disagree"
}

# ---------- stylesheet fingerprint, heading permalinks, prev/next, print (issue 18) ----------

# The stylesheet is linked under its content hash (asset_url) and published
# under that name and its plain one. An edit of it renders every page that
# links it again, incrementally, with the new name; the old name leaves the
# output, and the output equals a full build.
t_fingerprinted_stylesheet() {
    fresh good
    kv build
    expect_rc 0
    local a=site/articles/kv-cache/index.html old new pages
    old=$(grep -o 'href="/assets/css/site\.[0-9a-f]\{12\}\.css"' "$W/$a" | head -n 1 | sed 's/^href="\/\(.*\)"$/\1/')
    [ -n "$old" ] || { fail "no fingerprinted stylesheet link in $a"; return; }
    expect_file "site/$old"
    expect_file site/assets/css/site.css
    cmp -s "$W/site/$old" "$W/templates/assets/css/site.css" || fail "site/$old is not the stylesheet"
    pages=$(grep -rl 'assets/css/site\.' "$W/site" --include='*.html' | wc -l)
    [ "$pages" -ge 5 ] || fail "only $pages pages link the stylesheet"
    printf '\n/* edited */\n' >>"$W/templates/assets/css/site.css"
    kv build
    expect_rc 0
    tail -n 1 "$W.err" | grep -q ' rendered, ' || fail "not incremental: $(tail -n 1 "$W.err")"
    new=$(grep -o 'assets/css/site\.[0-9a-f]\{12\}\.css' "$W/$a" | head -n 1)
    [ -n "$new" ] && [ "$new" != "$old" ] || { fail "the edited stylesheet kept its name $old"; return; }
    expect_file "site/$new"
    expect_no_file "site/$old"
    cmp -s "$W/site/$new" "$W/templates/assets/css/site.css" || fail "site/$new is not the edited stylesheet"
    local stale
    stale=$(grep -rl "$old" "$W/site" --include='*.html')
    [ -z "$stale" ] || fail "pages still link $old: $stale"
    [ "$(grep -rl "$new" "$W/site" --include='*.html' | wc -l)" -eq "$pages" ] ||
        fail "not every page that linked the stylesheet links $new"
    same_as_full css
    # a template's asset_url of an asset that is not there fails at the call
    printf '{{ asset_url("/assets/nosuch.css") }}\n' >>"$W/templates/partials/head.html"
    kv build
    expect_rc 1
    grep -Eq 'templates/partials/head.html:[0-9]+(:[0-9]+)?: error: .*asset_url "/assets/nosuch.css": no such file' "$W.err" ||
        fail "no error at the asset_url call: $(grep -m 1 error "$W.err")"
}

# h2-h4 with ids end with a permalink (named in the page's language, left
# out of the search index); the table of contents keeps the headings' text;
# kvsite render (the spec's path) prints none.
t_heading_permalinks() {
    fresh good
    kv build
    expect_rc 0
    expect_grep site/articles/kv-cache/index.html '<h2 id="sizing">Sizing<a class="anchor" href="#sizing" aria-label="Link to this section" data-pagefind-ignore>#</a></h2>'
    expect_grep site/articles/kv-cache/index.html '<a class="anchor" href="#sizing-1" aria-label="Link to this section" data-pagefind-ignore>#</a></h2>'
    sed -i 's/^language: en$/language: zh-CN/' "$W/site.yaml"
    kv build
    expect_rc 0
    expect_grep site/articles/kv-cache/index.html '<h2 id="sizing">Sizing<a class="anchor" href="#sizing" aria-label="本节链接" data-pagefind-ignore>#</a></h2>'
    printf '# One\n\n## Two\n\n### Three\n' >"$W.md"
    KV_STDIN=$W.md kv render
    expect_rc 0
    grep -q 'class="anchor"' "$W.out" && fail "kvsite render printed a permalink: $(cat "$W.out")"
    grep -q '^<h2 id="two">Two</h2>$' "$W.out" || fail "kvsite render: $(cat "$W.out")"
}

# The default theme: articles link their neighbours in the section's listing
# (rel=prev, rel=next, titles, in the site's language); root-relative links
# print with the site's origin when base_url has one.
t_prev_next_theme() {
    paginated_site || return
    kv build --strict
    expect_rc 0
    local a=site/articles/post-12/index.html
    expect_grep $a '<nav class="prevnext" aria-label="Previous and next pages" data-pagefind-ignore>'
    expect_grep $a '<a class="pn pn-prev" href="/articles/post-13/" rel="prev"><span class="pn-dir"><span aria-hidden="true">← </span>Previous</span> <span class="pn-title">Post 13</span></a>'
    expect_grep $a '<a class="pn pn-next" href="/articles/post-11/" rel="next"><span class="pn-dir">Next<span aria-hidden="true"> →</span></span> <span class="pn-title">Post 11</span></a>'
    expect_grep $a "<html lang=\"en\" style=\"--origin: 'https://example.org'\">"
    expect_grep $a '<link rel="stylesheet" href="/assets/theme.'
    # the newest has no previous page, the oldest no next one
    expect_no_grep site/articles/post-25/index.html 'rel="prev"'
    expect_grep site/articles/post-25/index.html 'rel="next"'
}

# The bundled site: a technique card links the cards beside it in the
# technique map's section, in Chinese, and its stylesheet by content hash.
t_prev_next_bundled_card() {
    NCOPY=$((NCOPY + 1))
    W=$TMP/$NCOPY-$CASE/project
    mkdir -p "$W"
    cp -R "$ROOT/content" "$ROOT/templates" "$ROOT/checks" "$ROOT/site.yaml" "$W/"
    sed -i 's/^  enabled: true$/  enabled: false/' "$W/site.yaml"
    kv build --strict
    expect_rc 0
    local c=site/techniques/chunked-attention/index.html
    expect_grep $c '<nav class="prevnext" aria-label="上一张和下一张卡片" data-pagefind-ignore>'
    local prev next
    prev=$(grep -o '<a class="pn pn-prev" href="[^"]*" rel="prev">' "$W/$c" | sed 's/.*href="\([^"]*\)".*/\1/')
    next=$(grep -o '<a class="pn pn-next" href="[^"]*" rel="next">' "$W/$c" | sed 's/.*href="\([^"]*\)".*/\1/')
    [ -n "$prev" ] && [ -n "$next" ] || { fail "no prev/next on $c"; return; }
    # each neighbour links back
    grep -q "<a class=\"pn pn-next\" href=\"/techniques/chunked-attention/\" rel=\"next\">" "$W/site${prev}index.html" ||
        fail "$prev does not link back as next"
    grep -q "<a class=\"pn pn-prev\" href=\"/techniques/chunked-attention/\" rel=\"prev\">" "$W/site${next}index.html" ||
        fail "$next does not link back as prev"
    expect_grep $c '<span class="pn-dir"><span aria-hidden="true">← </span>上一张卡片</span>'
    expect_grep site/notes/index.html '<link rel="stylesheet" href="/assets/style.'
    grep -q '<h2 id="[^"]*">[^<]*<a class="anchor" href="#[^"]*" aria-label="本节链接" data-pagefind-ignore>#</a></h2>' "$W/$c" ||
        fail "no heading permalink on $c"
}

# ---------- running ----------

run_cases "${BASH_SOURCE[0]}" "$@"
