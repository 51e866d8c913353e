#!/usr/bin/env bash
# End-to-end tests of a new user's first hour: `make install`, `kvsite new` in both
# languages, the default theme and its lookup order, the checks library as a
# dependency (require and data look in the site's checks/, then the library),
# site-level presets and measurements.
#
#   KVSITE=/abs/path/kvsite bash tests/e2e/firsthour.sh [CASE...]
#
# Same harness as run.sh: `ok NAME` or `FAIL NAME: why` per case, then
# `N passed, N failed`; exit 1 when a case failed. The install goes into a
# temporary PREFIX (make install, with B set to the binary's build folder so
# nothing is rebuilt), and the installed binary is the one under test.
set -u
export LC_ALL=C.UTF-8
unset GITHUB_ACTIONS

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=cases.sh
. "$HERE/cases.sh"
kvsite_under_test firsthour.sh
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kvsite-firsthour.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
P=$TMP/prefix     # the install
K=$P/bin/kvsite   # the installed binary

# ---------- the harness (as in run.sh) ----------

CASE="" W="" WHY="" DIFFS="" RC=0 NDIR=0

fail() { WHY=${WHY:+$WHY; }$1; }

# empty: a new empty folder for the case in $W
empty() {
    NDIR=$((NDIR + 1))
    W=$TMP/$NDIR-$CASE
    mkdir -p "$W"
}

# run_in DIR CMD...: runs CMD in DIR; stdout in $W.out, stderr in $W.err, status in RC
run_in() {
    local d=$1; shift
    { (cd "$d" && exec timeout -k 5 60 "$@") </dev/null >"$W.out" 2>"$W.err"; RC=$?; } 2>/dev/null
}

expect_rc() {
    if [ "$RC" -ne "$1" ]; then
        fail "exit $RC, expected $1"
        DIFFS+="    stderr (last 5 lines):"$'\n'"$(tail -n 5 "$W.err" | sed 's/^/    | /')"$'\n'
    fi
}
expect_file() { [ -f "$1" ] || fail "${1#$TMP/} missing"; }
expect_no_file() { [ ! -e "$1" ] || fail "${1#$TMP/} should not exist"; }
# expect_grep FILE TEXT (a fixed string)
expect_grep() {
    if [ ! -f "$1" ]; then fail "${1#$TMP/} missing"
    elif ! grep -qF -- "$2" "$1"; then fail "${1#$TMP/} lacks: $2"; fi
}
expect_no_grep() {
    if [ -f "$1" ] && grep -qF -- "$2" "$1"; then fail "${1#$TMP/} should not contain: $2"; fi
}
SUMMARY_OK='^kvsite: built [0-9]+ pages, [0-9]+ figures \([0-9]+ computed, [0-9]+ measured, [0-9]+ cited\), 0 warnings, 0 errors in [0-9.]+ s$'
expect_summary() {
    local last; last=$(tail -n 1 "$W.err")
    grep -Eq "$1" <<<"$last" || fail "last stderr line is \"$last\", expected /$1/"
}

# install: make install into $P once (every case uses the installed binary)
install_once() {
    [ -x "$K" ] && return 0
    make -s -C "$ROOT" install PREFIX="$P" B="$(dirname "$KVSITE")" >"$TMP/install.log" 2>&1
}

# newsite LANG: `kvsite new blog --lang LANG` in an empty folder; the site in $S
newsite() {
    empty
    install_once || { fail "make install failed: $(tail -n 3 "$TMP/install.log")"; return 1; }
    run_in "$W" "$K" new blog --lang "$1"
    expect_rc 0
    S=$W/blog
}

# ---------- cases ----------

t_install_layout() {
    empty
    install_once || { fail "make install failed: $(tail -n 3 "$TMP/install.log")"; return; }
    local s=$P/share/kvsite
    for f in bin/kvsite share/kvsite/theme/page.html share/kvsite/theme/checks.html \
             share/kvsite/theme/assets/theme.css share/kvsite/checks/kv.lua \
             share/kvsite/checks/models.lua share/kvsite/starter/en/site.yaml \
             share/kvsite/starter/zh/site.yaml share/kvsite/starter/en/.gitignore \
             share/kvsite/starter/en/.github/workflows/kvsite.yml; do
        expect_file "$P/$f"
    done
    # the library, not the bundled site's data
    expect_no_file "$s/checks/measurements"
    expect_no_file "$s/checks/samples"
    expect_no_file "$s/checks/sources.yaml"
    # uninstall removes what install made
    cp -a "$P" "$TMP/prefix-copy"
    make -s -C "$ROOT" uninstall PREFIX="$TMP/prefix-copy" >/dev/null 2>&1 || fail "make uninstall failed"
    expect_no_file "$TMP/prefix-copy/bin/kvsite"
    expect_no_file "$TMP/prefix-copy/share/kvsite"
}

t_new_en_builds_strict() {
    newsite en || return
    run_in "$S" "$K" build --strict
    expect_rc 0
    expect_summary "$SUMMARY_OK"
    expect_no_file "$S/checks/kv.lua"   # the library is used in place, not copied
    expect_grep "$S/site/index.html" '<html lang="en">'
    expect_grep "$S/site/index.html" 'Skip to content'
    expect_grep "$S/site/articles/first-figures/index.html" 'January 15, 2026'
    expect_grep "$S/site/articles/first-figures/index.html" '<span class="fig-k">Expression</span> <code>kv.bytes(qwen, tokens)</code></span><span class="fig-row"><span class="fig-k">Value</span> 234,881,024 B = 224.0 MiB</span>'
    expect_grep "$S/site/articles/first-figures/index.html" 'data-tier="cited"'
    expect_grep "$S/site/sources/index.html" 'Qwen2.5-7B-Instruct model card'
    expect_grep "$S/site/checks/index.html" 'Checks report'
    expect_file "$S/site/assets/theme.css"
    expect_file "$S/site/404.html"
    expect_no_grep "$S/site/articles/first-figures/index.html" '跳到正文'
    expect_grep "$S/.gitignore" '.kvsite/'
    expect_grep "$S/.github/workflows/kvsite.yml" 'build --strict'
    expect_grep "$S/.github/workflows/kvsite.yml" 'actions/deploy-pages'
    # a changed figure fails the strict build at its line
    sed -i 's/`224 MiB {=/`225 MiB {=/' "$S/content/articles/first-figures.md"
    run_in "$S" "$K" build --strict
    expect_rc 1
    expect_grep "$W.err" 'content/articles/first-figures.md:23:29: error: quoted 225 MiB, but kv.bytes(qwen, tokens) = 224.00 MiB'
}

t_new_zh_builds_strict() {
    newsite zh || return
    run_in "$S" "$K" build --strict
    expect_rc 0
    expect_summary "$SUMMARY_OK"
    expect_grep "$S/site/index.html" '<html lang="zh-CN">'
    expect_grep "$S/site/index.html" '跳到正文'
    expect_grep "$S/site/articles/first-figures/index.html" '2026年1月15日'
    expect_grep "$S/site/checks/index.html" '核查报告'
    expect_no_grep "$S/site/index.html" 'Skip to content'
    expect_no_grep "$S/site/articles/first-figures/index.html" 'January'
}

t_new_refuses_nonempty() {
    empty
    install_once || { fail "make install failed"; return; }
    mkdir -p "$W/blog" && echo keep >"$W/blog/notes.txt"
    run_in "$W" "$K" new blog --lang en
    expect_rc 2
    expect_grep "$W.err" 'not empty'
    expect_no_file "$W/blog/site.yaml"
    [ "$(cat "$W/blog/notes.txt")" = keep ] || fail "notes.txt changed"
    run_in "$W" "$K" new blog2 --lang fr
    expect_rc 2
    expect_no_file "$W/blog2"
    # an empty folder is fine
    mkdir -p "$W/blog3"
    run_in "$W" "$K" new blog3
    expect_rc 0
    expect_file "$W/blog3/site.yaml"
}

t_new_page() {
    newsite en || return
    run_in "$S" "$K" new page notes/first-note
    expect_rc 0
    local f=$S/content/notes/first-note.md
    expect_grep "$f" 'title: "First note"'
    expect_grep "$f" "date: $(date +%Y-%m-%d)"
    run_in "$S" "$K" new page notes/first-note
    expect_rc 1
    expect_grep "$W.err" 'already exists'
    run_in "$S" "$K" new page ../escape
    expect_rc 1
    expect_no_file "$W/escape.md"
    run_in "$S" "$K" build --strict
    expect_rc 0
    expect_grep "$S/site/notes/first-note/index.html" 'First note'
}

# The theme's stylesheet is linked under its content hash; when the
# installed theme's stylesheet changes (an upgrade), the next build renders
# every page again with the new name (the theme is an input of every page),
# and its output equals a full build's. (A copy of the install: the others keep theirs.)
t_theme_stylesheet_fingerprint() {
    newsite en || return
    local p2=$TMP/prefix-fp k2 a old new
    cp -a "$P" "$p2"
    k2=$p2/bin/kvsite
    run_in "$S" "$k2" build --strict
    expect_rc 0
    a=$S/site/articles/first-figures/index.html
    old=$(grep -o 'assets/theme\.[0-9a-f]\{12\}\.css' "$a" | head -n 1)
    [ -n "$old" ] || { fail "no fingerprinted theme.css link"; return; }
    cmp -s "$S/site/$old" "$p2/share/kvsite/theme/assets/theme.css" || fail "$old is not the theme's stylesheet"
    expect_file "$S/site/assets/theme.css"
    printf '\n/* a theme upgrade */\n' >>"$p2/share/kvsite/theme/assets/theme.css"
    run_in "$S" "$k2" build --strict
    expect_rc 0
    # the installed theme is an input of every page (incremental.c): not "up to date"
    grep -q 'up to date' "$W.err" && fail "the theme upgrade left the build up to date"
    new=$(grep -o 'assets/theme\.[0-9a-f]\{12\}\.css' "$a" | head -n 1)
    [ -n "$new" ] && [ "$new" != "$old" ] || { fail "the theme's stylesheet kept its name"; return; }
    expect_no_file "$S/site/$old"
    cmp -s "$S/site/$new" "$p2/share/kvsite/theme/assets/theme.css" || fail "$new is not the new stylesheet"
    local stale
    stale=$(grep -rl "$old" "$S/site" --include='*.html')
    [ -z "$stale" ] || fail "pages still link $old: $stale"
    run_in "$S" "$k2" build --strict --no-cache -o "$W/full"
    expect_rc 0
    diff -r "$S/site" "$W/full" >"$W.diff" 2>&1 || fail "the rebuilt output differs from a full build: $(head -n 3 "$W.diff")"
    # the site's own stylesheet of that name wins, under its own hash
    mkdir -p "$S/templates/assets"
    echo '/* the site s own */' >"$S/templates/assets/theme.css"
    run_in "$S" "$k2" build --strict
    expect_rc 0
    new=$(grep -o 'assets/theme\.[0-9a-f]\{12\}\.css' "$a" | head -n 1)
    cmp -s "$S/site/$new" "$S/templates/assets/theme.css" || fail "$new is not the site's own stylesheet"
}

t_theme_override_one_template() {
    newsite en || return
    mkdir -p "$S/templates/assets"
    cat >"$S/templates/page.html" <<'EOF'
<!doctype html><html lang="{{ site.language }}"><title>{{ page.title }}</title><p class="mine">{{ page.title }}</p>{{{ page.content }}}</html>
EOF
    echo '/* the site s own */' >"$S/templates/assets/theme.css"
    run_in "$S" "$K" build --strict
    expect_rc 0
    expect_grep "$S/site/articles/first-figures/index.html" '<p class="mine">'
    expect_no_grep "$S/site/articles/first-figures/index.html" 'Skip to content'
    expect_grep "$S/site/index.html" 'Skip to content'   # home.html from the theme
    expect_grep "$S/site/assets/theme.css" 'the site s own'
    # removing the override brings the theme's page back
    rm "$S/templates/page.html"
    run_in "$S" "$K" build --strict
    expect_rc 0
    expect_grep "$S/site/articles/first-figures/index.html" 'Skip to content'
}

t_theme_by_default_without_templates() {
    empty
    install_once || { fail "make install failed"; return; }
    mkdir -p "$W/content"
    printf -- '---\ntitle: Hi\n---\nHello.\n' >"$W/content/hi.md"
    run_in "$W" "$K" build --strict
    expect_rc 0
    expect_grep "$W/site/hi/index.html" 'Skip to content'
    # a site with its own templates/ and no theme key keeps to its own
    mkdir -p "$W/templates"
    run_in "$W" "$K" build --strict
    expect_rc 1
    expect_grep "$W.err" 'page.html'
    printf 'theme: blue\n' >"$W/site.yaml"
    run_in "$W" "$K" build
    expect_rc 2
    expect_grep "$W.err" 'site.yaml:1:8: error: theme must be "default"'
}

t_library_without_checks_folder() {
    empty
    install_once || { fail "make install failed"; return; }
    mkdir -p "$W/content"
    cat >"$W/content/kv.md" <<'EOF'
---
title: KV
---

```{lua}
kv = require "kv"
```

Qwen2.5-7B keeps `224 MiB {= kv.bytes(kv.model "qwen2.5-7b", 4096)}` of KV cache at 4,096 tokens.
EOF
    run_in "$W" "$K" build --strict
    expect_rc 0
    expect_summary "$SUMMARY_OK"
    expect_grep "$W/site/kv/index.html" 'data-tier="computed"'
    expect_no_file "$W/checks"
    # a module that is nowhere says where it was looked for
    printf -- '---\ntitle: X\n---\n\n```{lua}\nlocal x = require "nope"\n```\n' >"$W/content/x.md"
    run_in "$W" "$K" build --strict
    expect_rc 1
    expect_grep "$W.err" 'require "nope": checks/nope.lua: there is no checks/ folder, and the checks library has no such file'
}

t_site_preset_and_measurement() {
    newsite en || return
    mkdir -p "$S/checks/measurements"
    cat >"$S/checks/models.yaml" <<'EOF'
tiny-1b:
  name: Tiny-1B
  layers: 16
  kv_heads: 4
  head_dim: 64
  max_context: 8192
  source: "config.json of tiny-1b, as published"
EOF
    cat >"$S/checks/measurements/tiny.yaml" <<'EOF'
provenance:
  machine: "a laptop"
  engine: "llama.cpp"
  build: "b1"
  model: "Tiny-1B f16"
  date: "2026-01-10"
  source: "our own run"
series:
  kv_by_context:
    unit: "MiB"
    key: "n_ctx"
    value: "kv_mib"
    rows:
      - {n_ctx: 4096, kv_mib: 64}
EOF
    cat >"$S/content/articles/tiny.md" <<'EOF'
---
title: Tiny
---

```{lua}
kv = require "kv"
meas = require "meas"
```

Tiny-1B keeps `64 MiB {= kv.bytes(kv.model "tiny-1b", 4096), meas.value("measurements/tiny.yaml", "kv_by_context", 4096)}` at 4,096 tokens,
measured as `64 MiB {= meas.value("measurements/tiny.yaml", "kv_by_context", 4096)}`; the library's
presets are still there: `224 MiB {= kv.bytes(kv.model "qwen2.5-7b", 4096)}`.
EOF
    run_in "$S" "$K" build --strict
    expect_rc 0
    expect_summary '\(3 computed, 2 measured, 1 cited\)'
    expect_no_file "$S/checks/kv.lua"
    # a preset of the wrong shape is an error that names the file, the model and the field
    sed -i 's/layers: 16/layers: sixteen/' "$S/checks/models.yaml"
    run_in "$S" "$K" build --strict
    expect_rc 1
    expect_grep "$W.err" 'checks/models.yaml: model "tiny-1b": layers must be an integer, got "sixteen"'
}

t_site_module_shadows_library() {
    newsite en || return
    printf 'return {bytes = function() return 1 end}\n' >"$S/checks/kv.lua"
    run_in "$S" "$K" build --strict
    # the site's checks/kv.lua is found first: the library's kv is not loaded
    expect_rc 1
    expect_grep "$W.err" "content/articles/first-figures.md:18: error: in {lua} block: attempt to call a nil value (field 'model')"
}

# ---------- run ----------

run_cases "${BASH_SOURCE[0]}" "$@"
