#!/usr/bin/env bash
# Hostile input, end to end: whatever a pull request puts in content/,
# templates/, checks/ or site.yaml, `kvsite build` must not crash, hang, read or
# write outside the project, or publish a partial site. It reports a located
# error and goes on to report the rest.
#
# Every case starts from tests/fixtures/hostile-base, already built once (its
# site/ is the snapshot), next to a canary folder outside the project. The case
# breaks the copy in one way and builds again. Unless the case says otherwise
# it then asserts:
#   - the exit status (1 for content, 2 for site.yaml and usage), no crash or
#     sanitizer report, no hang (a hard timeout of $CASE_TIMEOUT s);
#   - every expected diagnostic, matched as a regex on `file:line:col: error:`;
#   - site/ byte for byte as it was, no .site.staging-* or .kvsite/site.prev.old-* left;
#   - nothing outside the project changed (the canary folder and its parent).
# Cases where hostile input must come out safely escaped expect exit 0 and grep
# the output instead.
#
# Usage: KVSITE=build/kvsite bash tests/e2e/hostile.sh [CASE...]
# (VERBOSE=1 shows the output of failing cases, KEEP=1 keeps the case folders)
# Prints `ok NAME` or `FAIL NAME: why`, then `N passed, N failed`; exit 1 on
# any failure. Needs bash, coreutils, python3 (to write odd bytes) and, for the
# read-only output case, mount namespaces (skipped when unavailable).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
kvsite=${KVSITE:-$top/build/kvsite}
base_fixture=$top/tests/fixtures/hostile-base
case_timeout=${CASE_TIMEOUT:-60}
only=("$@")

case $kvsite in /*) ;; *) kvsite=$PWD/$kvsite ;; esac
if [ ! -x "$kvsite" ]; then
    echo "hostile: $kvsite is not built (make build/kvsite)"
    echo "0 passed, 1 failed"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsite-hostile.XXXXXX")
trap '[ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
passed=0
failed=0

# ---------- helpers ----------

# A digest of a tree: names, types, modes, link targets and file contents.
tree_hash() {
    [ -e "$1" ] || { echo missing; return; }
    (
        cd "$1" || exit 1
        find . -printf '%y %m %p -> %l\n' | LC_ALL=C sort
        find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    ) | sha256sum | cut -d' ' -f1
}

# Everything in the case folder except the project: the canary and any
# stray file a build might leave next to the project.
outside_hash() {
    (
        cd "$W" || exit 1
        find . -path ./proj -prune -o -printf '%y %m %p -> %l\n' | LC_ALL=C sort
        find . -path ./proj -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    ) | sha256sum | cut -d' ' -f1
}

selected() {
    [ ${#only[@]} -eq 0 ] && return 0
    local c
    for c in "${only[@]}"; do [ "$c" = "$1" ] && return 0; done
    return 1
}

# begin NAME: a fresh copy of the built base in $W; the project is $P.
begin() {
    NAME=$1
    W=$tmp/case/$NAME
    P=$W/proj
    rm -rf "$W"
    mkdir -p "$W"
    cp -a "$tmp/base/." "$W/"
    LOG=$tmp/log/$NAME.txt
    REASONS=()
}

# page REL TEXT...: writes content/REL, a front matter with a title, then the
# lines given. The body starts at line 4 of the file.
page() {
    local rel=$1
    shift
    mkdir -p "$(dirname "$P/content/$rel")"
    { printf -- '---\ntitle: Hostile\n---\n'; printf '%s\n' "$@"; } >"$P/content/$rel"
}

# lua_page REL CODE...: a page whose ```{lua} block opens on line 4, so the
# first line of CODE is line 5 of the file.
lua_page() {
    local rel=$1
    shift
    page "$rel" '```{lua}' "$@" '```'
}

# build [ARGS...]: runs kvsite on the project; output in $LOG, status in $RC.
build() {
    OUTSIDE_BEFORE=$(outside_hash)
    local start=$SECONDS
    (cd "$W" && timeout -k 5 "$case_timeout" "$kvsite" build -C proj "$@") >"$LOG" 2>&1
    RC=$?
    ELAPSED=$((SECONDS - start))
}

why() { REASONS+=("$*"); }

# Checks every build must pass, whatever it was asked to do.
common_checks() {
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        why "hung: killed after ${case_timeout}s"
    elif [ "$RC" -ge 126 ]; then
        why "crashed (exit status $RC)"
    fi
    if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|Lua panic|internal error|crashed \(signal' "$LOG"; then
        why "crash report: $(grep -m1 -E 'AddressSanitizer|LeakSanitizer|runtime error:|Lua panic|internal error|crashed \(signal' "$LOG")"
    fi
    local left
    left=$(find "$W" -maxdepth 4 \( -name '.*.staging-*' -o -name '*.prev.old-*' \) 2>/dev/null | head -1)
    [ -n "$left" ] && why "left behind: ${left#"$W"/}"
    [ "$(outside_hash)" = "$OUTSIDE_BEFORE" ] && [ "$(outside_hash)" = "$CANARY" ] ||
        why "something outside the project changed: $(cd "$W" && find . -path ./proj -prune -o -newer "$tmp/base/stamp" -print | head -3 | tr '\n' ' ')"
}

# expect_fail STATUS REGEX...: the build failed with STATUS, printed a line
# matching each REGEX, and left site/ as it was.
expect_fail() {
    local status=$1 re
    shift
    common_checks
    [ "$RC" -eq "$status" ] || why "exit status $RC, expected $status"
    for re in "$@"; do
        grep -qE -- "$re" "$LOG" || why "no line matches /$re/"
    done
    [ "$(tree_hash "$P/site")" = "$SITE_HASH" ] || why "site/ changed after a failed build"
    grep -qE '^kvsite: failed' "$LOG" || [ "$status" -ne 1 ] || why "no failure summary line"
}

# expect_ok [REGEX...]: the build succeeded; each REGEX matches its output.
expect_ok() {
    local re
    common_checks
    [ "$RC" -eq 0 ] || why "exit status $RC, expected 0: $(grep -m2 'error' "$LOG" | tr '\n' ' ')"
    # what is published is valid UTF-8, whatever bytes went in
    local f
    while IFS= read -r -d '' f; do
        iconv -f UTF-8 -t UTF-8 "$f" >/dev/null 2>&1 || why "invalid UTF-8 in ${f#"$P"/}"
    done < <(find "$P/site" -type f \( -name '*.html' -o -name '*.xml' -o -name '*.json' \) -print0 2>/dev/null)
    for re in "$@"; do
        grep -qE -- "$re" "$LOG" || why "no line matches /$re/"
    done
}

# site_lacks FILE REGEX: a published file does not match REGEX.
site_lacks() {
    local f=$P/site/$1
    if [ ! -f "$f" ]; then
        why "site/$1 was not written"
    elif grep -qiE -- "$2" "$f"; then
        why "site/$1 contains /$2/: $(grep -oiE -m1 -- ".{0,30}$2.{0,30}" "$f" | head -1)"
    fi
}
site_has() {
    local f=$P/site/$1
    if [ ! -f "$f" ]; then
        why "site/$1 was not written"
    elif ! grep -qE -- "$2" "$f"; then
        why "site/$1 does not contain /$2/"
    fi
}

finish() {
    if [ ${#REASONS[@]} -eq 0 ]; then
        echo "ok $NAME"
        passed=$((passed + 1))
    else
        local IFS='; '
        echo "FAIL $NAME: ${REASONS[*]}"
        failed=$((failed + 1))
        if [ -n "${VERBOSE:-}" ]; then sed 's/^/    | /' "$LOG" | cut -c1-300 | head -20; fi
    fi
    REASONS=()
}

skip() {
    echo "ok $NAME # skip $*"
    SKIPPED=$NAME
    passed=$((passed + 1))
}

# Writes bytes given as a Python expression to a file (odd bytes, big files).
pybytes() { python3 -c "import sys; sys.stdout.buffer.write($2)" >"$1"; }

BAD='content/notes/bad\.md'
BAD_X='content/notes/x\.md'

# ---------- the base ----------

mkdir -p "$tmp/base/proj" "$tmp/base/canary/dir" "$tmp/log"
cp -a "$base_fixture/." "$tmp/base/proj/"
echo 'secret: outside the project' >"$tmp/base/canary/secret.yaml"
echo 'return { secret = "outside the project" }' >"$tmp/base/canary/evil.lua"
echo '<p>secret outside the project</p>' >"$tmp/base/canary/secret.html"
echo 'keep me' >"$tmp/base/canary/dir/keep.txt"
# A copy of the project outside it, each file a pull request could point a
# link at carrying LEAKED7f3a: the leak cases below build through links into
# it and must publish or print none of it (no_leak).
mkdir -p "$tmp/base/canary/mirror"
cp -a "$base_fixture/." "$tmp/base/canary/mirror/"
mkdir -p "$tmp/base/canary/mirror/templates/assets"
echo 'LEAKED7f3a text outside the project' >"$tmp/base/canary/mirror/checks/secret.txt"
echo 'LEAKED7f3a asset outside the project' >"$tmp/base/canary/mirror/content/secret.txt"
echo '/* LEAKED7f3a */' >"$tmp/base/canary/mirror/templates/assets/secret.css"
printf 'leak7f3a:\n  title: LEAKED7f3a source outside the project\n  year: 2024\n' \
    >>"$tmp/base/canary/mirror/checks/sources.yaml"
printf 'LEAKED7f3a_key: 1\n' >"$tmp/base/canary/secrets.yaml"
if ! (cd "$tmp/base" && "$kvsite" build -C proj) >"$tmp/base.out" 2>&1; then
    echo "FAIL base: the hostile-base fixture does not build:"
    sed 's/^/    | /' "$tmp/base.out" | head -20
    echo "0 passed, 1 failed"
    exit 1
fi
touch "$tmp/base/stamp"
SITE_HASH=$(tree_hash "$tmp/base/proj/site")
CANARY=$(W=$tmp/base outside_hash)
sleep 1 # so -newer in messages tells this run's files apart

# ---------- Lua that runs away ----------

t_lua_loop() {
    lua_page notes/bad.md 'local x = 0' 'while true do x = x + 1 end'
    build
    expect_fail 1 "^$BAD:6(:[0-9]+)?: error: .*instruction budget exceeded"
}

t_lua_loop_in_pcall() {
    lua_page notes/bad.md 'while true do' '  pcall(function() while true do end end)' 'end'
    build
    expect_fail 1 "^$BAD:[56](:[0-9]+)?: error: .*instruction budget exceeded"
}

t_lua_loop_in_xpcall_handler() {
    # the budget runs out in the body; the message handler then loops too
    lua_page notes/bad.md 'xpcall(function() while true do end end,' \
        '       function() while true do end end)'
    build
    expect_fail 1 "^$BAD:[56](:[0-9]+)?: error: .*instruction budget exceeded"
}

t_lua_deep_recursion() {
    lua_page notes/bad.md 'local function f(n) return 1 + f(n + 1) end' 'f(1)'
    build
    expect_fail 1 "^$BAD:[56](:[0-9]+)?: error: .*(stack overflow|memory cap exceeded)"
}

t_lua_string_bomb() {
    lua_page notes/bad.md 'local s = "x"' 'for i = 1, 40 do s = s .. s end'
    build
    expect_fail 1 "^$BAD(:[0-9]+)*: error: .*memory cap exceeded"
}

t_lua_rep_bomb() {
    lua_page notes/bad.md 'local s = string.rep("x", 1 << 40)'
    build
    expect_fail 1 "^$BAD(:[0-9]+)*: error: .*(memory cap exceeded|too large)"
}

t_lua_table_bomb() {
    lua_page notes/bad.md 'local t = {}' 'for i = 1, 1e9 do t[i] = {i} end'
    build
    expect_fail 1 "^$BAD(:[0-9]+)*: error: .*(memory cap exceeded|instruction budget exceeded)"
}

t_lua_bomb_in_pcall() {
    # a memory error swallowed by pcall must not leave the page able to go on
    lua_page notes/bad.md 'for i = 1, 100 do pcall(string.rep, "x", 1 << 30) end' 'ok_after = 1'
    page notes/bad2.md 'After: `{lua} ok_after`'
    build
    expect_fail 1 "^$BAD(:[0-9]+)*: error: .*memory cap exceeded"
}

t_lua_backtracking_pattern() {
    # runs in C, where no hook fires: stopped by limits.page_timeout (2 s)
    lua_page notes/bad.md 'local s = string.rep("a", 300000)' 'local x = s:find(".-.-.-b")'
    page notes/later.md 'A later page still builds: `1 {= 1}`.'
    build
    expect_fail 1 "^$BAD(:[0-9]+)*: error: .*(limits.page_timeout|took longer)"
    [ "$ELAPSED" -le 20 ] || why "took ${ELAPSED}s to stop a 2 s page"
}

t_lua_gc_loop() {
    lua_page notes/bad.md 'setmetatable({}, {__gc = function() while true do end end})'
    build
    expect_fail 1 "^$BAD:5(:[0-9]+)?: error: .*__gc"
}

t_lua_close_loop() {
    lua_page notes/bad.md 'do' '  local x <close> = setmetatable({}, {__close = function() while true do end end})' 'end'
    build
    expect_fail 1 "^$BAD:[5-7](:[0-9]+)?: error: .*instruction budget exceeded"
}

t_lua_load_bytecode() {
    lua_page notes/bad.md 'local f = assert(load("\27LuaT\0\25\147\r\n\26\n", "x", "b"))'
    lua_page notes/bad2.md 'local f = assert(load("\27LuaT\0\25\147\r\n\26\n"))'
    build
    expect_fail 1 "^$BAD:5(:[0-9]+)?: error: .*binary" \
        "^content/notes/bad2\.md:5(:[0-9]+)?: error: .*binary"
}

t_lua_string_dump() {
    lua_page notes/bad.md 'local b = string.dump(print)'
    lua_page notes/bad2.md 'local b = ("").dump(function() end)'
    build
    expect_fail 1 "^$BAD:5(:[0-9]+)?: error: .*dump" \
        "^content/notes/bad2\.md:5(:[0-9]+)?: error: .*dump"
}

# ---------- Lua that reaches for what it must not ----------

t_lua_io_os_debug_package() {
    lua_page notes/bad.md 'io.open("../../canary/pwned", "w"):write("x")'
    lua_page notes/bad2.md 'os.execute("touch ../../canary/pwned")'
    lua_page notes/bad3.md 'debug.getregistry()'
    lua_page notes/bad4.md 'package.loadlib("libc.so.6", "system")("touch ../../canary/pwned")'
    lua_page notes/bad5.md 'dofile("/etc/passwd")'
    lua_page notes/bad6.md 'loadfile("/etc/passwd")'
    lua_page notes/bad7.md 'collectgarbage("stop")'
    lua_page notes/bad8.md 'coroutine.wrap(print)()'
    build
    expect_fail 1 "^$BAD:5(:[0-9]+)?: error: .*'io'" \
        "^content/notes/bad2\.md:5(:[0-9]+)?: error: .*'os'" \
        "^content/notes/bad3\.md:5(:[0-9]+)?: error: .*'debug'" \
        "^content/notes/bad4\.md:5(:[0-9]+)?: error: .*'package'" \
        "^content/notes/bad5\.md:5(:[0-9]+)?: error: .*'dofile'" \
        "^content/notes/bad6\.md:5(:[0-9]+)?: error: .*'loadfile'" \
        "^content/notes/bad7\.md:5(:[0-9]+)?: error: .*'collectgarbage'" \
        "^content/notes/bad8\.md:5(:[0-9]+)?: error: .*'coroutine'"
}

t_lua_require_paths() {
    lua_page notes/bad.md 'require "../site"'
    lua_page notes/bad2.md 'require "/etc/passwd"'
    lua_page notes/bad3.md 'require "kv/../../../canary/evil"'
    ln -s ../../canary/evil.lua "$P/checks/evil.lua"
    lua_page notes/bad4.md 'local e = require "evil"'
    build
    expect_fail 1 "^$BAD:5(:[0-9]+)?: error: .*require" \
        "^content/notes/bad2\.md:5(:[0-9]+)?: error: .*require" \
        "^content/notes/bad3\.md:5(:[0-9]+)?: error: .*require" \
        "^content/notes/bad4\.md:5(:[0-9]+)?: error: .*(outside|symbolic link|refused)"
    grep -q 'outside the project' "$LOG" && why "the secret outside the project was read"
}

t_lua_data_paths() {
    lua_page notes/bad.md 'local d = data "../site.yaml"'
    lua_page notes/bad2.md 'local d = data "/etc/hostname.txt"'
    lua_page notes/bad3.md 'local d = data "measurements/../../site.yaml"'
    ln -s ../../canary/secret.yaml "$P/checks/leak.yaml"
    lua_page notes/bad4.md 'local d = data "leak.yaml"' 'print(d.secret)'
    ln -s ../../canary "$P/checks/out"
    lua_page notes/bad5.md 'local d = data "out/secret.yaml"' 'print(d.secret)'
    build
    expect_fail 1 "^$BAD:5(:[0-9]+)?: error: .*data" \
        "^content/notes/bad2\.md:5(:[0-9]+)?: error: .*data" \
        "^content/notes/bad3\.md:5(:[0-9]+)?: error: .*data" \
        "^content/notes/bad4\.md:5(:[0-9]+)?: error: .*(outside|symbolic link|refused)" \
        "^content/notes/bad5\.md:5(:[0-9]+)?: error: .*(outside|symbolic link|refused)"
    grep -q 'outside the project' "$LOG" && why "the secret outside the project was read"
}

t_lua_data_alias_bomb() {
    python3 - "$P/checks/bomb.yaml" <<'EOF'
import sys
lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
prev = 'a'
for n in 'bcdefghij':
    lines.append('%s: &%s [%s]' % (n, n, ','.join(['*' + prev] * 10)))
    prev = n
open(sys.argv[1], 'w').write('\n'.join(lines) + '\n')
EOF
    lua_page notes/bad.md 'local d = data "bomb.yaml"'
    build
    expect_fail 1 "^$BAD:5(:[0-9]+)?: error: .*checks/bomb\.yaml:1:[0-9]+: .*(alias|anchor)"
}

t_lua_pages_isolated() {
    # each page checks that nothing leaked in, then tries to leak out; with
    # -j 1 one worker renders both, one after the other
    local code=(
        'assert(LEAK == nil, "a global leaked from another page")'
        'assert(string.rep ~= nil and math.floor ~= nil, "a library change leaked")'
        'assert(("ab"):rep(2) == "abab", "the string metatable was changed")'
        'assert(require("kv").mark == nil, "a module instance leaked")'
        'assert(data("measurements/run.yaml").bytes == 234881024, "data leaked")'
        'LEAK = true'
        'pcall(function() string.rep = nil end)'
        'pcall(function() math.floor = nil end)'
        'pcall(function() table.insert = nil end)'
        'pcall(function() require("kv").mark = true end)'
        'pcall(function() data("measurements/run.yaml").bytes = 0 end)'
        'pcall(function() getmetatable("").__index.rep = nil end)'
        'pcall(function() getmetatable("").__index = {} end)'
        'pcall(rawset, getmetatable("") or {}, "__index", {})'
        'pcall(setmetatable, _G, {__index = function() return 1 end})'
    )
    lua_page notes/a.md "${code[@]}"
    lua_page notes/b.md "${code[@]}"
    page notes/c.md 'Still there: `6 B {= #("abc"):rep(2)}`.'
    build -j 1
    expect_ok
}

t_lua_math_random_reproducible() {
    page notes/a.md '`{lua} math.random(1000000)`'
    page notes/b.md '`{lua} math.random(1000000)`'
    build -j 1
    common_checks
    local a b
    a=$(grep -o '<p>[0-9]*</p>' "$P/site/notes/a/index.html")
    b=$(grep -o '<p>[0-9]*</p>' "$P/site/notes/b/index.html")
    [ -n "$a" ] && [ "$a" = "$b" ] || why "math.random differs between pages: '$a' vs '$b'"
}

t_lua_hostile_tostring_error() {
    lua_page notes/bad.md \
        'error(setmetatable({}, {__tostring = function() while true do end end}))'
    page notes/bad2.md \
        'A figure: `1 {= error(setmetatable({}, {__tostring = function() while true do end end}))}`.'
    lua_page notes/bad3.md \
        'error(setmetatable({}, {__index = function() while true do end end, __name = "x"}))'
    build
    expect_fail 1 "^$BAD:5(:[0-9]+)?: error: .*error object" \
        "^content/notes/bad2\.md:4(:[0-9]+)?: error: .*error object" \
        "^content/notes/bad3\.md:5(:[0-9]+)?: error: .*error object"
    [ "$ELAPSED" -le 10 ] || why "took ${ELAPSED}s: a __tostring was run?"
}

t_lua_hostile_tostring_value() {
    page notes/bad.md \
        'Shown: `{lua} setmetatable({}, {__tostring = function() while true do end end})`.'
    page notes/bad2.md \
        'Quoted: `1 {= setmetatable({}, {__tostring = function() while true do end end, __sub = function() while true do end end})}`.'
    build
    expect_fail 1 "^$BAD:4(:[0-9]+)?: error: " "^content/notes/bad2\.md:4(:[0-9]+)?: error: "
    [ "$ELAPSED" -le 10 ] || why "took ${ELAPSED}s"
}

t_lua_print_flood() {
    # print() notes are for people: a page cannot flood the build log
    lua_page notes/bad.md 'for i = 1, 1e6 do print(i) end'
    build
    expect_ok
    local lines
    lines=$(wc -l <"$LOG")
    [ "$lines" -lt 10000 ] || why "printed $lines lines of notes"
}

# ---------- YAML ----------

alias_bomb() { # alias_bomb: a billion laughs in YAML
    python3 -c "
lines = ['a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]']
prev = 'a'
for n in 'bcdefghi':
    lines.append('%s: &%s [%s]' % (n, n, ','.join(['*' + prev] * 9)))
    prev = n
print('\n'.join(lines))"
}

t_yaml_alias_bomb_front_matter() {
    { echo '---'; echo 'title: Bomb'; alias_bomb; echo '---'; echo 'Body.'; } >"$P/content/notes/bad.md"
    build
    expect_fail 1 "^$BAD:3:[0-9]+: error: .*(alias|anchor)"
}

t_yaml_alias_bomb_site() {
    { cat "$P/site.yaml"; echo 'params:'; alias_bomb | sed 's/^/  /'; } >"$P/site.yaml.new"
    mv "$P/site.yaml.new" "$P/site.yaml"
    build
    expect_fail 2 "^site\.yaml:1[0-9]:[0-9]+: error: .*(alias|anchor)"
}

t_yaml_deep_nesting_front_matter() {
    { echo '---'; echo 'title: Deep'; printf 'x: '; head -c 10000 /dev/zero | tr '\0' '['; echo; echo '---'; } \
        >"$P/content/notes/bad.md"
    build
    expect_fail 1 "^$BAD:3:[0-9]+: error: .*(nest|deep)"
}

t_yaml_deep_nesting_block_style() {
    {
        echo '---'
        echo 'title: Deep'
        for i in $(seq 0 199); do printf "%*sk:\n" $((i * 2)) ''; done
        echo '---'
    } >"$P/content/notes/bad.md"
    build
    expect_fail 1 "^$BAD:[0-9]+:[0-9]+: error: .*(nest|deep)"
}

t_yaml_deep_nesting_site() {
    { cat "$P/site.yaml"; printf 'params: '; head -c 10000 /dev/zero | tr '\0' '['; echo; } >"$P/site.yaml.new"
    mv "$P/site.yaml.new" "$P/site.yaml"
    build
    expect_fail 2 "^site\.yaml:1[0-9]:[0-9]+: error: .*(nest|deep)"
}

t_yaml_duplicate_keys() {
    page notes/bad.md 'Body.'
    printf -- '---\ntitle: One\ndate: 2026-01-01\ntitle: Two\n---\nBody.\n' >"$P/content/notes/bad.md"
    build
    expect_fail 1 "^$BAD:4:1: error: .*duplicate"
}

t_yaml_duplicate_keys_site() {
    { cat "$P/site.yaml"; echo 'title: Again'; } >"$P/site.yaml.new"
    mv "$P/site.yaml.new" "$P/site.yaml"
    build
    expect_fail 2 "^site\.yaml:1[0-9]:1: error: .*duplicate"
}

t_yaml_invalid_utf8() {
    pybytes "$P/content/notes/bad.md" "b'---\ntitle: \"caf\xe9\"\n---\nBody.\n'"
    pybytes "$P/content/notes/bad2.md" "b'---\ntitle: ok\ntags: [\"\xed\xa0\x80\"]\n---\nBody.\n'"
    pybytes "$P/content/notes/bad3.md" "b'---\ntitle: \"a\\\\u0000b\"\n---\nBody.\n'"
    build
    expect_fail 1 "^$BAD:2:[0-9]+: error: .*UTF-8" \
        "^content/notes/bad2\.md:3:[0-9]+: error: .*UTF-8" \
        "^content/notes/bad3\.md:2:[0-9]+: error: .*(NUL|\\\\0|U\+0000)"
}

t_yaml_invalid_utf8_site() {
    python3 -c "import sys; sys.stdout.buffer.write(open(sys.argv[1],'rb').read() + b'description: \"\xc0\xaf\"\n')" \
        "$P/site.yaml" >"$P/site.yaml.new"
    mv "$P/site.yaml.new" "$P/site.yaml"
    build
    expect_fail 2 "^site\.yaml:1[0-9]:[0-9]+: error: .*UTF-8"
}

t_yaml_huge_front_matter() {
    { echo '---'; echo 'title: Big'; for i in $(seq 1 12000); do echo "k$i: vvvvvv"; done; echo '---'; } \
        >"$P/content/notes/bad.md"
    build
    expect_fail 1 "^$BAD:2(:[0-9]+)?: error: .*front matter too large"
}

t_yaml_tags_and_types() {
    printf -- '---\ntitle: !!python/object:os.system "x"\n---\nBody.\n' >"$P/content/notes/bad.md"
    printf -- '---\ntitle: [a, b]\n---\nBody.\n' >"$P/content/notes/bad2.md"
    printf -- '---\n? [complex, key]\n: 1\ntitle: x\n---\nBody.\n' >"$P/content/notes/bad3.md"
    build
    expect_fail 1 "^$BAD:2:[0-9]+: error: " "^content/notes/bad2\.md:2:[0-9]+: error: .*title" \
        "^content/notes/bad3\.md:2:[0-9]+: error: "
}

# ---------- Markdown ----------

# md_pathological PYEXPR: a page body made by Python; must build (exit 0), be
# refused as too deeply nested (one located error), or be stopped by the wall
# clock as one error at the page; never crash or hang.
md_pathological() {
    { printf -- '---\ntitle: Pathological\n---\n'; python3 -c "import sys; sys.stdout.write($1)"; } \
        >"$P/content/notes/bad.md"
    page notes/later.md 'Still built: `1 {= 1}`.'
    build
    if [ "$RC" -eq 0 ]; then
        expect_ok
    else
        expect_fail 1 "^($BAD: error: .*limits\.page_timeout|$BAD:[0-9]+:[0-9]+: error: .*nested deeper)"
    fi
    [ "$ELAPSED" -le 30 ] || why "took ${ELAPSED}s"
    if [ "$RC" -eq 0 ]; then
        echo "    # $NAME: rendered in ${ELAPSED}s"
    else
        echo "    # $NAME: $(grep -m1 -oE 'limits\.page_timeout|nested deeper[^(]*' "$LOG")"
    fi
}

t_md_nested_brackets() { md_pathological "'[' * 50000 + 'a' + ']' * 50000 + '\n' + '[' * 50000 + '\n'"; }
t_md_emphasis() { md_pathological "'*a **a ' * 50000 + '\n'"; }
t_md_nested_quotes() { md_pathological "'>' * 10000 + ' a\n'"; }
t_md_nested_lists() { md_pathological "''.join('  ' * i + '- a\n' for i in range(1500))"; }
t_md_backticks() { md_pathological "''.join('\`' * i + 'a' for i in range(1, 2000))"; }
t_md_link_refs() {
    md_pathological "'[x]: https://example.org/u\n' + '[x] ' * 200000 + '\n' + ''.join('[l%d]: /%d\n' % (i, i) for i in range(20000))"
}
t_md_huge_table() {
    # 2000 columns x 2000 rows, just under limits.page_bytes (4 MiB)
    md_pathological "'|' + 'a|' * 2000 + '\n|' + '-|' * 2000 + '\n' + ('|' * 2001 + '\n') * 1995"
}
t_md_many_headings() {
    # 100,000 headings with one text (400 KB): unique ids must not cost n^2
    # (n^2 would take minutes; 20 s leaves room for a sanitizer build)
    sed -i 's/page_timeout: 2$/page_timeout: 20/' "$P/site.yaml"
    { printf -- '---\ntitle: Headings\n---\n'; python3 -c "print('# a\n' * 100000)"; } >"$P/content/notes/bad.md"
    build
    expect_ok
    grep -q 'id="a-99999"' "$P/site/notes/bad/index.html" 2>/dev/null || why "no heading id a-99999"
}
t_md_many_figures() { md_pathological "'\`1 {= 1}\` ' * 20000 + '\n'"; }
t_md_autolinks_one_line() {
    # 40,000 links and autolinks in one line (3.6 MB): nodes cmark-gfm leaves
    # without a position are looked for from the last one found, not from
    # the start of the line each time (that took minutes)
    sed -i 's/page_timeout: 2$/page_timeout: 20/' "$P/site.yaml"
    { printf -- '---\ntitle: Links\n---\n'
      python3 -c "print(''.join('w [l](/) x https://example.org/x%d and www.example.com/y. ' % i for i in range(40000)))"
    } >"$P/content/notes/bad.md"
    build
    expect_ok
    grep -q 'https://example.org/x39999' "$P/site/notes/bad/index.html" 2>/dev/null || why "the last autolink is missing"
}

t_md_figure_before_table_location() {
    # a paragraph right before a table (no blank line) is split off by
    # cmark-gfm; its figures still report their own line
    page notes/bad.md 'Intro.' '' 'The value is `3 B {= 2}` here.' '| a | b |' '|---|---|' '| 1 | 2 |'
    build
    expect_fail 1 "^$BAD:6:15: error: quoted 3 B"
}

t_md_nul_bytes() {
    pybytes "$P/content/notes/bad.md" "b'---\ntitle: Nul\n---\nBody\n\nhere\x00there\n'"
    build
    expect_fail 1 "^$BAD:6:5: error: .*NUL"
}

t_md_invalid_utf8() {
    pybytes "$P/content/notes/bad.md" "b'---\ntitle: Bad\n---\nBody\n\nab\xff\xfe\n'"
    pybytes "$P/content/notes/bad2.md" "b'---\ntitle: Bad\n---\n\xe4\xb8\n'"
    build
    expect_fail 1 "^$BAD:6:3: error: .*UTF-8" "^content/notes/bad2\.md:4:1: error: .*UTF-8"
}

t_md_10mb_page() {
    { printf -- '---\ntitle: Huge\n---\n'; head -c 10485760 /dev/zero | tr '\0' 'a'; } >"$P/content/notes/bad.md"
    build
    expect_fail 1 "^$BAD(:[0-9]+)*: error: .*(too large|limits.page_bytes)"
}

t_md_lua_block_positions() {
    # a Lua error on the third line of a block reports that line of the file
    page notes/bad.md 'Intro.' '' '```{lua}' 'local a = 1' 'local b = 2' 'local c = nil + 1' '```'
    build
    expect_fail 1 "^$BAD:9(:[0-9]+)?: error: .*arithmetic"
}

# ---------- templates ----------

t_tpl_lua_error() {
    printf '<p>{{ page.title }}</p>\n<p>\n{{ nothing.here }}\n</p>\n' >"$P/templates/page.html"
    build
    expect_fail 1 "^templates/page\.html:3(:[0-9]+)?: error: .*nothing"
}

t_tpl_syntax_error() {
    printf '<p>\n{%% for i = 1, 3 %%}\n{{ i }}\n{%% end %%}\n' >"$P/templates/page.html"
    printf '<p>{{ unterminated\n' >"$P/templates/section.html"
    build
    expect_fail 1 "^templates/page\.html:[2-4](:[0-9]+)?: error: " \
        "^templates/section\.html:1(:[0-9]+)?: error: .*unterminated"
}

t_tpl_infinite_loop() {
    printf '<p>\n{%% while true do end %%}\n</p>\n' >"$P/templates/page.html"
    build
    expect_fail 1 "^templates/page\.html:2(:[0-9]+)?: error: .*instruction budget exceeded"
}

t_tpl_output_bomb() {
    # stopped by the output cap, the budget, or at worst the wall clock
    printf '{%% for i = 1, 1e9 do %%}{{ string.rep("x", 1000) }}{%% end %%}\n' >"$P/templates/page.html"
    build
    expect_fail 1 "^(templates/page\.html:1(:[0-9]+)?: error: .*(instruction budget|memory cap|larger than)|content/notes/ok\.md: error: .*limits\.page_timeout)"
}

t_tpl_include_cycle() {
    printf '<a>\n{{ include "partials/b.html" }}\n' >"$P/templates/partials/a.html"
    printf '<b>\n\n{{ include "partials/a.html" }}\n' >"$P/templates/partials/b.html"
    printf '{{ include "partials/a.html" }}\n' >"$P/templates/page.html"
    build
    expect_fail 1 "^templates/(page|partials/[ab])\.html:[1-3](:[0-9]+)?: error: .*(cycle|nested)"
}

t_tpl_include_paths() {
    printf '{{ include "../site.yaml" }}\n' >"$P/templates/page.html"
    printf '{{ include "/etc/passwd" }}\n' >"$P/templates/section.html"
    build
    expect_fail 1 "^templates/page\.html:1(:[0-9]+)?: error: .*(not a plain path|\.\.)" \
        "^templates/section\.html:1(:[0-9]+)?: error: .*(not a plain path|absolute)"
}

t_tpl_symlink_out() {
    # a template that is a symbolic link out of the project must not be read
    # (its text would be published)
    ln -sf ../../../canary/secret.html "$P/templates/partials/head.html"
    build
    expect_fail 1 "templates/partials/head\.html.*(symbolic link|outside|refused)"
    grep -rqs 'secret outside the project' "$P/site" "$P/.kvsite" && why "the secret was rendered"
}

t_tpl_markdown_inline_bytes() {
    # Lua strings are bytes: invalid UTF-8 (a lead byte at the very end) must
    # be refused or rendered safely, never read past the end of the text
    printf '<p>\n{{{ markdown_inline("# a\\219") }}}\n{{{ markdown_inline("\\255\\0x") }}}\n</p>\n' \
        >"$P/templates/page.html"
    build
    if [ "$RC" -eq 0 ]; then
        expect_ok
    else
        expect_fail 1 "^templates/page\.html:[23](:[0-9]+)?: error: "
    fi
}

t_tpl_front_matter_template() {
    printf -- '---\ntitle: T\ntemplate: ../../canary/secret.html\n---\nx\n' >"$P/content/notes/bad.md"
    printf -- '---\ntitle: T\ntemplate: /etc/passwd\n---\nx\n' >"$P/content/notes/bad2.md"
    build
    expect_fail 1 "^$BAD:3:[0-9]+: error: .*template" "^content/notes/bad2\.md:3:[0-9]+: error: .*template"
}

t_tpl_kept_writer() {
    # a writer kept past its include and called later (regression: it wrote
    # into a freed buffer); the collector runs in between
    mkdir -p "$P/templates/partials"
    printf '{%% keep = _o %%}kept\n' >"$P/templates/partials/keep.html"
    printf '{{{ include "partials/keep.html" }}}\n{%% local t = {} for i = 1, 20000 do t[i] = {i} end t = nil %%}\n{%% keep("late") %%}\n{{{ page.content }}}\n' \
        >"$P/templates/page.html"
    build
    expect_fail 1 "^templates/page\.html:3(:[0-9]+)?: error: .*writer was called after its template returned"
}

t_lua_markdown_inline_in_figure() {
    # a figure whose expression calls markdown_inline, which adds figures to
    # the page and moves their array (regression: heap corruption)
    # (markdown_inline is a template helper, in the templates' environment:
    # the template hands it to the page's environment, where the figures of
    # the summary it renders run)
    sed -i '1i {% getmetatable(_G).__index.markdown_inline = markdown_inline %}' "$P/templates/page.html"
    local many="(function() local b = string.char(96) for i = 1, 60 do markdown_inline(b .. '1 B {= 1}' .. b .. ' ' .. b .. '2 B {= 1}' .. b) end return 1048576 end)()"
    printf -- '---\ntitle: T\nsummary: "`1 MiB {= %s}` and `2 MiB {= %s}`"\n---\nx\n' "$many" "$many" \
        >"$P/content/notes/x.md"
    build
    expect_fail 1 '^content/notes/x\.md:3:[0-9]+: error: quoted 2 MiB' 'error: quoted 2 B, but 1 = 1.00 B'
    grep -q 'content/notes/x\.md:3:[0-9]+: error: quoted 1 MiB' "$LOG" && why "the first figure failed"
}

t_kept_host_objects() {
    # host objects kept in globals by the page's Lua and by the template, and
    # used after what made them has ended, fail cleanly or still read right
    lua_page notes/x.md 'kept_print = print' 'kept_md = markdown_inline' 'kept_err = error'
    printf '{%% kept_page, kept_toc, kept_figs, kept_site = page, page.toc, page.figures, site %%}\n{%% w = _o; e = _oe %%}{{{ include "partials/head.html" }}}\n{%% local ok = pcall(function() return kept_figs[1] and kept_figs[1].quote end) %%}{{{ page.content }}}{%% for i = 1, 3 do markdown_inline("`1 B {= 1}`") end %%}{{ kept_page.title }}{{ #kept_toc }}{{ kept_site.title }}\n' \
        >"$P/templates/page.html"
    build
    common_checks
    [ "$RC" -le 1 ] || why "exit status $RC"
}

t_log_controls_escaped() {
    # print and error in page Lua must not write lines of their own into the
    # CI log: no fake workflow commands, no terminal escapes (regression)
    lua_page notes/x.md 'print("x\n::error file=README.md,line=1::fake\r\n::add-mask::secret\27[2J")' \
        'error("boom\n::warning file=a.md::fake2\27]8;;x\7")'
    GITHUB_ACTIONS=true build
    expect_fail 1 "^$BAD_X:5(:[0-9]+)?: note: print: x\\\\n::error file=README\.md" "^::error file=content/notes/x\.md"
    grep -qE '^::(error|warning) file=(README|a)\.md' "$LOG" && why "a fake workflow command reached the log"
    grep -q '^::add-mask::' "$LOG" && why "an add-mask command reached the log"
    grep -q $'\x1b' "$LOG" && why "an escape character reached the log"
    grep -q $'\x07' "$LOG" && why "a BEL reached the log"
}

t_feed_control_chars() {
    # XML 1.0 forbids most C0 controls: the feed must stay well-formed
    # (a host in base_url, or there is no sitemap.xml)
    sed -i 's|^base_url: .*|base_url: "https://example.org/"|' "$P/site.yaml"
    pybytes "$P/content/notes/x.md" 'b"---\ntitle: \"a\\x0b b\\x01\"\nsummary: \"s\\x1f\"\ndate: 2024-01-01\n---\nx\n"'
    build
    expect_ok
    python3 -c 'import sys, xml.dom.minidom as m; [m.parse(f) for f in sys.argv[1:]]' \
        "$P/site/feed.xml" "$P/site/sitemap.xml" 2>>"$LOG" || why "feed.xml or sitemap.xml is not well-formed XML"
    if command -v xmllint >/dev/null; then
        xmllint --noout "$P/site/feed.xml" "$P/site/sitemap.xml" 2>>"$LOG" || why "xmllint refuses the feed"
    fi
}

t_html_percent_fragment() {
    # browsers decode percent-escapes in fragments: "#%61-1" finds id "a-1"
    page notes/x.md '## a 1' '' '## 代价' '' '[x](#%61-1) [y](#%E4%BB%A3%E4%BB%B7) [z](x.md#a-1)'
    build
    expect_ok
}

t_cfg_protocol_relative_base() {
    sed -i 's|^base_url: .*|base_url: "//evil.example/"|' "$P/site.yaml"
    build
    expect_fail 2 '^site\.yaml:[0-9]+:[0-9]+: error: base_url "//evil\.example/" is protocol-relative'
}

t_cfg_ceilings() {
    # a pull request cannot lift the limits the CI pins (regression)
    sed -i -e 's|^  page_timeout: .*|  page_timeout: 86400|' \
        -e 's|^  lua_instructions: .*|  lua_instructions: 1000000000000000|' "$P/site.yaml"
    printf 'markdown:\n  unsafe: true\n' >>"$P/site.yaml"
    KVSITE_LIMITS=page_timeout=10,lua_instructions=2e8 build --no-unsafe
    expect_fail 2 '^site\.yaml:[0-9]+:3: error: limits\.page_timeout is 86400, above the ceiling 10' \
        '^site\.yaml:[0-9]+:3: error: limits\.lua_instructions is 1000000000000000, above the ceiling 200000000' \
        '^site\.yaml:[0-9]+:3: error: markdown\.unsafe is true, but'
    # a flag adds a ceiling but cannot lift the environment's
    KVSITE_LIMITS=page_timeout=1 build --limits page_timeout=20
    grep -qE '^site\.yaml:[0-9]+:3: error: limits\.page_timeout is 86400, above the ceiling 1 ' "$LOG" ||
        why "--limits lifted the ceiling of KVSITE_LIMITS"
    KVSITE_LIMITS=bogus build
    expect_fail 2 '^kvsite: error: KVSITE_LIMITS: "bogus" is not NAME=NUMBER'
}

# ---------- output paths ----------

t_out_two_pages_one_url() {
    printf -- '---\ntitle: X\nslug: y\n---\nx\n' >"$P/content/notes/x.md"
    page notes/y.md 'y'
    mkdir -p "$P/content/notes/z"
    page notes/z.md 'z'
    page notes/z/_index.md 'z section'
    build
    expect_fail 1 "content/notes/(x|y)\.md(:[0-9]+)*: error: .*(two pages|one URL)" \
        "content/notes/z(\.md|/_index\.md)(:[0-9]+)*: error: .*(two pages|one URL)"
}

t_out_slugs() {
    printf -- '---\ntitle: X\nslug: ..\n---\nx\n' >"$P/content/notes/bad.md"
    printf -- '---\ntitle: X\nslug: a/b\n---\nx\n' >"$P/content/notes/bad2.md"
    printf -- '---\ntitle: X\nslug: ../../../canary\n---\nx\n' >"$P/content/notes/bad3.md"
    printf -- '---\ntitle: X\nslug: ".hidden"\n---\nx\n' >"$P/content/notes/bad4.md"
    build
    expect_fail 1 "^$BAD:3:[0-9]+: error: .*slug" "^content/notes/bad2\.md:3:[0-9]+: error: .*slug" \
        "^content/notes/bad3\.md:3:[0-9]+: error: .*slug" "^content/notes/bad4\.md:3:[0-9]+: error: .*slug"
}

t_out_case_collision() {
    page notes/A.md 'upper'
    page notes/a.md 'lower'
    build
    expect_fail 1 "content/notes/[Aa]\.md(:[0-9]+)*: error: .*case"
}

t_out_tag_collision() {
    printf -- '---\ntitle: X\ntags: ["../../x", "A B", "a-b", "<script>"]\n---\nx\n' >"$P/content/notes/t.md"
    build
    common_checks
    # either refused with an error at the page, or slugged safely
    if [ "$RC" -eq 0 ]; then
        [ -z "$(find "$P/site" -path '*..*')" ] || why "a path with .. was written"
        site_lacks notes/t/index.html '<script>'
    else
        grep -qE '^content/notes/t\.md:3:[0-9]+: error: .*tag' "$LOG" || why "no located tag error"
        [ "$(tree_hash "$P/site")" = "$SITE_HASH" ] || why "site/ changed after a failed build"
    fi
}

# ---------- HTML injection ----------

t_html_injection() {
    sed -i 's|^base_url: .*|base_url: "https://example.org/"|' "$P/site.yaml" # a sitemap too
    cat >"$P/content/notes/x.md" <<'EOF'
---
title: "<script>alert(1)</script> & \"quotes\""
summary: "<script>alert(2)</script> `{lua} '<script>alert(3)</script>'`"
tags: ["<script>alert(4)</script>", "ok"]
params:
  x: "<script>alert(5)</script>"
---
# <script>alert(6)</script> heading

Inline `{lua} "<script>alert(7)</script>"` and `1 {= 1 --"><script>alert(8)</script>}`.

<script>alert(9)</script>

<div onclick="alert(10)">raw</div> <img src=x onerror=alert(11)>

[a](javascript:alert(12)) [b](JavaScript:alert(13)) [c]( javascript:alert(14) )
[d](<javascript:alert(15)>) [e](vbscript:msgbox(16)) [f](data:text/html,<script>alert(17)</script>)
[g](java&#115;cript:alert(18)) [h](&#106;avascript:alert(19)) <javascript:alert(20)>
![i](javascript:alert(21)) [j][ref] [k](JAVASCRIPT&colon;alert(22))
[<script>alert(26)</script>](javascript:alert("%3Cscript%3Ealert(27)%3C/script%3E"))

[ref]: javascript:alert(24)

```{lua}
--| echo: true
x = "<script>alert(25)</script>"
```

`{lua} x`
EOF
    build
    expect_ok
    local f
    for f in notes/x/index.html index.html notes/index.html checks/index.html tags/index.html feed.xml; do
        site_lacks "$f" '<script'
        site_lacks "$f" '<(div|img)[^>]* on[a-z]+='
        site_lacks "$f" 'href="[[:space:]]*(javascript|vbscript|data:text)'
        site_lacks "$f" 'src="[[:space:]]*javascript'
    done
    site_has notes/x/index.html '&lt;script&gt;alert\(1\)'
    site_has notes/x/index.html '&lt;script&gt;alert\(7\)'
    site_lacks sitemap.xml '<script'
    [ -z "$(find "$P/site" -name '*<*')" ] || why "a file name carries markup"
}

t_html_obfuscated_urls() {
    # "java%73cript:" is no scheme to a browser: a relative link, so checked
    # (and broken) here; "java<tab>script:" reads as javascript: once a
    # browser drops the tab, so it is dropped like javascript: (url.c)
    page notes/x.md '[k](java%73cript:alert(1)) [l](<java	script:alert(2)>)'
    build
    expect_fail 1 '^content/notes/x\.md:4:1: error: broken link'
    grep -q 'script:alert(2)' "$LOG" && why "the tab-split javascript: link was kept"
}

t_html_unsafe_script_links() {
    # markdown.unsafe lets raw HTML through, never script links (regression)
    { cat "$P/site.yaml"; printf 'markdown:\n  unsafe: true\n'; } >"$P/site.yaml.new"
    mv "$P/site.yaml.new" "$P/site.yaml"
    page notes/x.md '[a](javascript:alert(1)) [b](VBScript:x) ![c](data:text/html,x) [d](JAVASCRIPT:y)'
    build
    expect_ok
    site_lacks notes/x/index.html '(javascript|vbscript|data):'
    site_has notes/x/index.html '<a href="">a</a>'
}

t_tpl_safe_url() {
    # a URL from data (sources.yaml) written into href goes through safe_url
    cat >>"$P/checks/sources.yaml" <<'YAML'
evil1:
  title: E1
  url: "javascript:alert(document.cookie)"
evil2:
  title: E2
  url: "//evil.example/x"
evil3:
  title: E3
  url: " java\tscript:alert(1)"
fine:
  title: F
  url: "https://example.org/a?b=1&c=2"
YAML
    printf '<ul>\n{%% for _, s in ipairs(site.sources) do %%}<li id="{{ s.key }}"><a href="{{ safe_url(s.url) }}">{{ s.title }}</a></li>\n{%% end %%}</ul>\n' \
        >"$P/templates/sources.html"
    build
    expect_ok
    site_lacks sources/index.html 'href="[^"#h]'
    site_lacks sources/index.html 'href="[^"]*script'
    site_has sources/index.html '<a href="#">E1</a>'
    site_has sources/index.html '<a href="#">E2</a>'
    site_has sources/index.html '<a href="https://example.org/a\?b=1&amp;c=2">F</a>'
}

t_html_unsafe_still_filters() {
    { cat "$P/site.yaml"; printf 'markdown:\n  unsafe: true\n'; } >"$P/site.yaml.new"
    mv "$P/site.yaml.new" "$P/site.yaml"
    page notes/x.md '<script>alert(1)</script>' '' '<iframe src="x"></iframe> <style>x</style>'
    build
    expect_ok
    site_lacks notes/x/index.html '<script'
    site_lacks notes/x/index.html '<iframe'
}

# ---------- the file system ----------

t_fs_output_is_a_file() {
    echo 'not a folder' >"$W/proj/out"
    build -o out
    expect_fail 2 'out.* exists and is not a folder'
    [ "$(cat "$P/out")" = 'not a folder' ] || why "the file was replaced"
}

t_fs_output_parent_is_a_file() {
    echo 'not a folder' >"$W/proj/file"
    build -o file/site
    expect_fail 2 'proj/file/.*Not a directory'
    [ "$(cat "$P/file")" = 'not a folder' ] || why "the file was replaced"
}

t_fs_output_into_sources() {
    build -o content/site
    expect_fail 2 'refusing to write the site'
}

t_fs_output_over_project() {
    build -o .
    expect_fail 2 'refusing to write the site'
}

t_fs_output_read_only() {
    # a read-only bind mount of the project, in a private mount namespace
    if ! unshare -m --propagation private true 2>/dev/null; then
        skip "no mount namespaces"
        return
    fi
    OUTSIDE_BEFORE=$(outside_hash)
    (cd "$W" && timeout -k 5 "$case_timeout" unshare -m --propagation private sh -c \
        'mount --bind proj proj && mount -o remount,bind,ro proj && exec "$0" build -C proj' "$kvsite") \
        >"$LOG" 2>&1
    RC=$?
    expect_fail 2 'proj/.*Read-only file system'
}

t_fs_disk_full() {
    # the state folder (where the new output is staged) on a full disk, in a
    # private mount namespace: one error says so, not one per file; the
    # previous output stays
    if ! unshare -m --propagation private true 2>/dev/null; then
        skip "no mount namespaces"
        return
    fi
    OUTSIDE_BEFORE=$(outside_hash)
    mkdir -p "$P/.kvsite"
    (cd "$W" && timeout -k 5 "$case_timeout" unshare -m --propagation private sh -c \
        'mount -t tmpfs -o size=8k tmpfs proj/.kvsite && exec "$0" build -C proj' "$kvsite") \
        >"$LOG" 2>&1
    RC=$?
    expect_fail 1 'error: no room on the disk for the output: cannot write .*No space left on device.*needs room for a second copy of it \(and [0-9]+ more files not written\)'
    [ "$(grep -c 'no room on the disk' "$LOG")" = 1 ] || why "$(grep -c 'no room on the disk' "$LOG") errors for the full disk, expected one"
    # the store of figures and links fails too: a line for each thing, none per page
    [ "$(grep -c 'error: ' "$LOG")" -le 6 ] || why "$(grep -c 'error: ' "$LOG") errors for one full disk"
}

t_fs_site_is_a_symlink() {
    # a pull request can commit site/ as a link to a folder outside the project
    rm -rf "$P/site"
    ln -s ../canary/dir "$P/site"
    SITE_HASH=$(tree_hash "$P/site")
    build
    common_checks
    [ "$RC" -ne 0 ] || why "built through a symbolic link out of the project"
    [ "$(cat "$W/canary/dir/keep.txt" 2>/dev/null)" = 'keep me' ] || why "the canary folder was replaced"
    SITE_HASH=$(tree_hash "$tmp/base/proj/site")
}

t_fs_staging_symlinks() {
    # the staging folder of the next build lives in the project: a pull request
    # can commit one whose entries point outside
    rm -rf "$P/.kvsite/site.prev"
    mkdir -p "$P/.kvsite/site.prev/assets"
    ln -s ../../../canary/dir "$P/.kvsite/site.prev/notes"
    ln -s ../../../canary/secret.html "$P/.kvsite/site.prev/index.html"
    ln -s ../../../../canary/secret.html "$P/.kvsite/site.prev/assets/x.css"
    build
    common_checks
    [ "$(cat "$W/canary/secret.html")" = '<p>secret outside the project</p>' ] || why "canary/secret.html was written"
    [ -z "$(ls "$W/canary/dir" | grep -v keep.txt)" ] || why "files were written into canary/dir: $(ls "$W/canary/dir" | tr '\n' ' ')"
}

t_fs_lock_symlink() {
    mkdir -p "$P/.kvsite"
    rm -rf "$P/.kvsite/site.lock" "$P/.kvsite/site.prev"
    ln -s ../../canary/lock "$P/.kvsite/site.lock"
    ln -s ../../canary/dir "$P/.kvsite/site.prev"
    build
    common_checks
    [ ! -e "$W/canary/lock" ] || why "canary/lock was created"
    [ -z "$(ls "$W/canary/dir" | grep -v keep.txt)" ] || why "files were written into canary/dir"
}

t_fs_state_dir_symlink() {
    # the state folder itself committed as a link out of the project: refused
    rm -rf "$P/.kvsite"
    ln -s ../canary/dir "$P/.kvsite"
    build
    expect_fail 2 "\.kvsite is a symbolic link: refused"
    [ -z "$(ls "$W/canary/dir" | grep -v keep.txt)" ] || why "files were written into canary/dir"
}

t_fs_stamp_same_size_edit() {
    # the no-change fast path must not take an edit for no change: same size,
    # same inode, modification time put back (touch -r)
    build
    build
    grep -q 'up to date' "$LOG" || why "the second build was not up to date (no fast path?)"
    local f=$P/content/notes/ok.md
    touch -r "$f" "$W/mtime"
    python3 -c "
import sys
with open(sys.argv[1], 'r+b') as f:
    d = f.read().replace(b'\`224 MiB {= qwen', b'\`225 MiB {= qwen')
    f.seek(0)
    f.write(d)" "$f"
    touch -r "$W/mtime" "$f"
    rm "$W/mtime"
    build
    expect_fail 1 '^content/notes/ok\.md:[0-9]+:[0-9]+: error: (value 1 of 2: )?quoted 225 MiB'
}

t_fs_missing_templates() {
    rm -rf "$P/templates"
    printf 'theme: none\n' >>"$P/site.yaml" # no default theme to fall back on
    build
    expect_fail 1 'templates/page\.html'
}

t_fs_symlink_loop_content() {
    ln -s . "$P/content/notes/loop"
    ln -s loop2 "$P/content/loop1"
    ln -s loop1 "$P/content/loop2"
    ln -s ../../canary "$P/content/out"
    ln -s ../../../canary/secret.html "$P/content/notes/leak.html"
    build
    expect_fail 1 'content/notes/loop(:[0-9]+)*: error: ' 'content/out(:[0-9]+)*: error: ' \
        'content/notes/leak\.html(:[0-9]+)*: error: '
}

t_fs_symlinked_config() {
    ln -sf ../canary/secret.yaml "$P/site.yaml"
    ln -sf ../../canary/secret.yaml "$P/checks/sources.yaml"
    build
    common_checks
    grep -q 'outside the project' "$LOG" && why "a file outside the project was read and shown"
    [ "$RC" -ne 0 ] || why "built with site.yaml and sources.yaml read from outside the project"
    [ "$(tree_hash "$P/site")" = "$SITE_HASH" ] || why "site/ changed after a failed build"
}

t_fs_deep_folders() {
    local d=$P/content
    for i in $(seq 1 60); do d=$d/d; done
    mkdir -p "$d"
    page "$(printf 'd/%.0s' $(seq 1 60))x.md" 'deep'
    build
    expect_fail 1 'content/d/d/.*(deep|nest|depth)'
}

t_fs_many_files() {
    { cat "$P/site.yaml"; printf '  files: 50\n'; } >"$P/site.yaml.new"
    mv "$P/site.yaml.new" "$P/site.yaml"
    mkdir -p "$P/content/many"
    for i in $(seq 1 100); do : >"$P/content/many/f$i.txt"; done
    build
    expect_fail 1 '(limits\.files|too many)'
}

# ---------- links and hard links out of the project ----------
# Each case points a link (or a second name) at a file outside the project
# that the old code read and published or printed; the build must stop with a
# located error and put none of the file's bytes in the output or the log.

# no_leak: LEAKED7f3a is nowhere in the output folders or the log.
no_leak() {
    local hit
    hit=$(grep -rls LEAKED7f3a "$P/site" "$P/.kvsite" "$LOG" 2>/dev/null | head -3 | tr '\n' ' ')
    [ -z "$hit" ] || why "the secret outside the project leaked into: $hit"
}

# top_link NAME TARGET: the project's NAME replaced by a link to TARGET.
top_link() {
    rm -rf "${P:?}/$1"
    ln -s "$2" "$P/$1"
}

t_leak_checks_is_a_symlink() {
    top_link checks ../canary/mirror/checks
    page notes/leak.md 'The text: `{lua} data("secret.txt")`.'
    build
    expect_fail 2 '^checks: error: a symbolic link: refused'
    no_leak
}

t_leak_content_is_a_symlink() {
    top_link content ../canary/mirror/content
    build
    expect_fail 2 '^content: error: a symbolic link: refused'
    no_leak
}

t_leak_templates_is_a_symlink() {
    top_link templates ../canary/mirror/templates
    build
    expect_fail 2 '^templates: error: a symbolic link: refused'
    no_leak
}

t_leak_template_assets_is_a_symlink() {
    top_link templates/assets ../../canary/mirror/templates/assets
    build
    expect_fail 2 '^templates/assets: error: a symbolic link: refused'
    no_leak
}

t_leak_sources_is_a_symlink() {
    top_link checks/sources.yaml ../../canary/mirror/checks/sources.yaml
    build
    expect_fail 2 '^checks/sources\.yaml: error: a symbolic link: refused'
    no_leak
}

t_leak_site_yaml_is_a_symlink() {
    top_link site.yaml ../canary/secrets.yaml
    build
    expect_fail 2 '^site\.yaml: error: a symbolic link: refused'
    no_leak
}

t_leak_link_inside_checks() {
    ln -s ../../canary/mirror/checks "$P/checks/out"
    ln -s ../../canary/mirror/checks/secret.txt "$P/checks/secret.txt"
    page notes/leak.md 'The text: `{lua} data("out/secret.txt")`.'
    page notes/leak2.md 'The text: `{lua} data("secret.txt")`.'
    build
    expect_fail 1 '^content/notes/leak\.md:4(:[0-9]+)?: error: .*data "out/secret\.txt": a symbolic link.*refused' \
        '^content/notes/leak2\.md:4(:[0-9]+)?: error: .*data "secret\.txt": a symbolic link.*refused'
    no_leak
}

t_leak_hard_link_data() {
    ln "$W/canary/mirror/checks/secret.txt" "$P/checks/secret.txt"
    page notes/leak.md 'The text: `{lua} data("secret.txt")`.'
    build
    expect_fail 1 '^content/notes/leak\.md:4(:[0-9]+)?: error: .*data "secret\.txt": cannot read: a hard link.*refused'
    no_leak
}

t_leak_hard_link_content() {
    ln "$W/canary/mirror/content/secret.txt" "$P/content/notes/secret.txt"
    build
    expect_fail 1 '^content/notes/secret\.txt: error: .*hard link.*refused'
    no_leak
}

t_leak_hard_link_template_asset() {
    mkdir -p "$P/templates/assets"
    ln "$W/canary/mirror/templates/assets/secret.css" "$P/templates/assets/secret.css"
    build
    expect_fail 1 '^templates/assets/secret\.css: error: .*hard link.*refused'
    no_leak
}

# ---------- run ----------

cases=$(declare -F | awk '{print $3}' | grep '^t_' | sed 's/^t_//')
for c in $cases; do
    selected "$c" || continue
    begin "$c"
    "t_$c"
    [ "${SKIPPED:-}" = "$c" ] || finish
done
[ -n "${KEEP:-}" ] || rm -rf "$tmp/case"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
