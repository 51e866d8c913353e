#!/usr/bin/env bash
# Tests of tests/lint/glossary.pl, then the lint on the bundled site.
#
#   bash tests/lint/run.sh
#
# Each case builds a small site (the real checks/glossary.yaml plus one page) and checks the
# lint's exit status and message: a retired variant in prose or a template fails at its
# file:line:col; the same text in a code block or code span, or an allowed phrase ("attention
# sink"), passes; a pending entry is a note. Then the bundled site must be clean.
set -u
export LC_ALL=C.UTF-8
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LINT="$HERE/glossary.pl"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kvsite-lint.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
PASS=0 FAIL=0

# site NAME FILE TEXT: a site in $TMP/NAME with the glossary and FILE holding TEXT
site() {
    local d="$TMP/$1"
    mkdir -p "$d/checks" "$(dirname "$d/$2")"
    cp "$ROOT/checks/glossary.yaml" "$d/checks/"
    printf '%s\n' "$3" > "$d/$2"
    echo "$d"
}

# expect NAME WANT_RC PATTERN DIR: run the lint on DIR, check its status and that its output
# matches PATTERN (grep -E)
expect() {
    local out rc
    out=$(perl "$LINT" "$4" 2>&1); rc=$?
    if [ "$rc" = "$2" ] && printf '%s\n' "$out" | grep -Eq -- "$3"; then
        PASS=$((PASS + 1)); echo "ok $1"
    else
        FAIL=$((FAIL + 1)); echo "FAIL $1: rc $rc (want $2); output:"; printf '%s\n' "$out" | sed 's/^/    /'
    fi
}

expect prose_variant 1 'content/a.md:3:4: error: retired term "KV 缓存" \(the glossary.s term is "KV cache"\)' \
    "$(site prose content/a.md $'# t\n\n正文 KV 缓存的大小')"
expect front_matter_variant 1 'content/a.md:2:13: error: retired term "潜在向量"' \
    "$(site fm content/a.md $'---\ntitle: MLA 的潜在向量\n---')"
expect template_variant 1 'templates/x.html:1:4: error: retired term "头宽"' "$(site tpl templates/x.html '<p>头宽</p>')"
expect code_block_ok 0 '0 errors' "$(site code content/a.md $'```lua\n-- KV 缓存\n```\n\n正文')"
expect code_span_ok 0 '0 errors' "$(site span content/a.md '用 `sinks = 4` 设置，`头宽` 不算')"
expect allowed_phrase_ok 0 '0 errors' "$(site phrase content/a.md '汇点（attention sink）和 learned sink 都可以')"
expect bare_sink 1 'content/a.md:1:5: error: retired term "sink"' "$(site sink content/a.md '开头的 sink 加窗口')"
expect longest_variant 1 'retired term "格子数"' "$(site cells content/a.md 'llama.cpp 的格子数')"
d=$(site pend content/models.md '查询 query 头')
printf 'pending:\n  "content/models.md": ["query 头"]\n' >> "$d/checks/glossary.yaml"
expect pending_note 0 'content/models.md:1:4: note: retired term "query 头" left pending' "$d"
d=$(site bad content/a.md 'x')
printf 'terms:\n  - term: "x"\n    retired: "not a list"\n' > "$d/checks/glossary.yaml"
expect bad_glossary 2 'expected a one-line \[ ... \] list' "$d"
expect bundled_site 0 ', 0 errors,' "$ROOT"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
