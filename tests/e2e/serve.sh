#!/usr/bin/env bash
# End-to-end tests of `kvsite serve` (issue 16), with curl on 127.0.0.1 and
# --port 0: pages served with their types, an edit shown within 2 seconds,
# a broken figure keeps the old page and shows the overlay with the located
# error, fixing it removes the overlay, traversal refused, Ctrl-C leaves no
# process behind and releases the lock, a second serve names the first one's
# address, and a build after serve writes what a build without it writes.
#
#   KVSITE=/abs/path/kvsite bash tests/e2e/serve.sh [CASE...]
#
# Same harness as run.sh: `ok NAME` or `FAIL NAME: why` per case, then
# `N passed, N failed`; exit 1 when a case failed.
set -u
export LC_ALL=C.UTF-8
unset GITHUB_ACTIONS

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=cases.sh
. "$HERE/cases.sh"
kvsite_under_test serve.sh
command -v curl >/dev/null || { echo "serve.sh: curl is missing (make deps)" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kvsite-serve.XXXXXX") || exit 2
SPID=""
trap '[ -n "$SPID" ] && kill -KILL "$SPID" 2>/dev/null; rm -rf "$TMP"' EXIT
FIXTURE=$ROOT/tests/fixtures/good
# How long an edit may take to show: 2 s, the issue's mark, on a machine with
# a core to spare; an ASan build is several times slower (x5), and on a
# machine busier than its cores the mark grows with the load (x load/cores).
LIMIT=2
grep -q __asan_init "$KVSITE" && LIMIT=10
LIMIT=$(awk -v l="$LIMIT" -v c="$(nproc)" '{ f = $1 / c; printf "%.1f", (f > 1) ? l * f : l }' /proc/loadavg)

# ---------- the harness (as in run.sh) ----------

CASE="" W="" WHY="" DIFFS="" RC=0 NDIR=0 URL=""

fail() { WHY=${WHY:+$WHY; }$1; }

# project: a copy of the good fixture in $W/p
project() {
    NDIR=$((NDIR + 1))
    W=$TMP/$NDIR-$CASE
    mkdir -p "$W"
    cp -r "$FIXTURE" "$W/p"
    rm -rf "$W/p/expected"
}

# start_serve DIR [ARGS...]: kvsite serve in the background; SPID its pid,
# URL its address once it says it serves (stderr in $W.serve.err)
start_serve() {
    local d=$1 i
    shift
    "$KVSITE" serve -C "$d" --port 0 "$@" </dev/null >"$W.serve.out" 2>"$W.serve.err" &
    SPID=$!
    URL=""
    for ((i = 0; i < 600; i++)); do
        URL=$(grep -o 'at http://127\.0\.0\.1:[0-9]*/[^ ]*' "$W.serve.err" 2>/dev/null | head -n 1)
        URL=${URL#at }
        [ -n "$URL" ] && return 0
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.05
    done
    fail "serve did not start: $(tail -n 3 "$W.serve.err" | tr '\n' ' ')"
    return 1
}

# stop_serve: SIGINT, as Ctrl-C; RC its exit status (124: it did not stop in 10 s)
stop_serve() {
    local i
    [ -n "$SPID" ] || return
    kill -INT "$SPID" 2>/dev/null
    for ((i = 0; i < 200; i++)); do
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$SPID" 2>/dev/null; then
        RC=124
        kill -KILL "$SPID" 2>/dev/null
    fi
    local status
    wait "$SPID" 2>/dev/null
    status=$?
    [ "$RC" = 124 ] || RC=$status
    SPID=""
}

# get PATH: the body in $W.body, headers in $W.head, status in CODE (PATH
# from the server's root, not the base path)
get() {
    local origin
    origin=$(echo "$URL" | grep -oE '^http://[^/]+')
    CODE=$(curl -s --path-as-is -o "$W.body" -D "$W.head" -w '%{http_code}' "$origin$1")
}

# wait_for PATH TEXT [absent]: polls PATH until its body has (or, with
# absent, lacks) TEXT, for up to LIMIT seconds; SECONDS_TAKEN says how long
wait_for() {
    local path=$1 text=$2 absent=${3:-} start=$EPOCHREALTIME
    while :; do
        get "$path"
        if [ -z "$absent" ] && grep -qF -- "$text" "$W.body"; then break; fi
        if [ -n "$absent" ] && [ "$CODE" = 200 ] && ! grep -qF -- "$text" "$W.body"; then break; fi
        if [ "$(echo "$EPOCHREALTIME - $start > $LIMIT" | bc)" = 1 ]; then
            fail "$path: ${absent:+no longer }showing \"$text\" not within $LIMIT s"
            return 1
        fi
        sleep 0.02
    done
    SECONDS_TAKEN=$(echo "$EPOCHREALTIME - $start" | bc)
}

# equals_fresh_build: the output serve left in $W/p equals a --no-cache build
# of a copy of its inputs
equals_fresh_build() {
    mkdir -p "$W/plain"
    cp -r "$W/p/content" "$W/p/templates" "$W/p/checks" "$W/p/site.yaml" "$W/plain/"
    "$KVSITE" build -C "$W/plain" --no-cache >/dev/null 2>"$W.b.err" || fail "plain build failed"
    if ! diff -r "$W/p/site" "$W/plain/site" >"$W.diff"; then
        fail "what serve left differs from a fresh build"
        DIFFS+="$(head -n 20 "$W.diff" | sed 's/^/    | /')"$'\n'
    fi
}

PAGE=/articles/kv-cache/
SRC=content/articles/kv-cache.md

# ---------- the cases ----------

t_serves_pages() {
    project
    start_serve "$W/p" || return
    get /
    [ "$CODE" = 200 ] || fail "/: status $CODE"
    grep -qi '^content-type: text/html; charset=utf-8' "$W.head" || fail "/: not text/html"
    grep -q 'EventSource' "$W.body" || fail "/: no live-reload script"
    get /assets/css/site.css
    [ "$CODE" = 200 ] || fail "css: status $CODE"
    grep -qi '^content-type: text/css' "$W.head" || fail "css: not text/css"
    cmp -s "$W.body" "$W/p/site/assets/css/site.css" || fail "css: not the file's bytes"
    get /feed.xml
    grep -qi '^content-type: application/xml' "$W.head" || fail "feed: not application/xml"
    get /articles/layout.svg
    grep -qi '^content-type: image/svg+xml' "$W.head" || fail "svg: not image/svg+xml"
    # HEAD: the headers only
    local h
    h=$(curl -s -I -o /dev/null -w '%{http_code} %{size_download}' "${URL%/}$PAGE")
    [ "$h" = "200 0" ] || fail "HEAD $PAGE: $h"
    # a folder without its '/' is redirected; the 404 page is the site's
    get /articles
    [ "$CODE" = 301 ] || fail "/articles: status $CODE"
    grep -qi '^location: /articles/' "$W.head" || fail "/articles: no redirect to /articles/"
    get /no/such/page/
    [ "$CODE" = 404 ] || fail "404: status $CODE"
    grep -qF 'Page not found' "$W.body" || fail "404: not the site's 404 page"
    get /checks.json
    [ "$CODE" = 200 ] || fail "checks.json: status $CODE"
    # the script is in the responses only, never in the output
    if grep -rqF -e EventSource -e __kvsite "$W/p/site"; then fail "the output holds serve's script"; fi
    stop_serve
    [ "$RC" = 0 ] || fail "serve exited $RC after SIGINT"
}

t_edit_reloads() {
    project
    start_serve "$W/p" || return
    # an open page's event stream: it hears of every finished build
    curl -sN "${URL%/}/__kvsite/events" >"$W.events" 2>/dev/null &
    local ev=$!
    sleep 0.3
    sed -i 's/^# Sizing the cache/# Sizing the cache, edited/' "$W/p/$SRC"
    wait_for "$PAGE" "Sizing the cache, edited" && echo "  edit shown in $SECONDS_TAKEN s"
    sleep 0.3
    kill "$ev" 2>/dev/null
    wait "$ev" 2>/dev/null
    [ "$(grep -c '^data: ' "$W.events")" -ge 2 ] ||
        fail "the event stream did not announce the rebuild: $(tr '\n' ' ' <"$W.events")"
    # a save by rename, as editors do (write a temporary file, move it over)
    sed 's/, edited/, renamed/' "$W/p/$SRC" >"$W/p/content/articles/.kv-cache.md.tmp"
    mv "$W/p/content/articles/.kv-cache.md.tmp" "$W/p/$SRC"
    wait_for "$PAGE" "Sizing the cache, renamed"
    # a new page in a new folder
    mkdir -p "$W/p/content/notes/more"
    printf -- '---\ntitle: Later\n---\nWritten while serving.\n' >"$W/p/content/notes/more/later.md"
    wait_for /notes/more/later/ "Written while serving."
    stop_serve
}

t_broken_figure_overlay() {
    project
    start_serve "$W/p" || return
    local before
    before=$(cat "$W/p/site/articles/kv-cache/index.html")
    sed -i 's/`80 {= layers}`/`81 {= layers}`/' "$W/p/$SRC"
    wait_for "$PAGE" 'kvsite-overlay' || { stop_serve; return; }
    grep -qF "$SRC:21:2: error: quoted 81, but layers = 80" "$W.body" ||
        fail "the overlay lacks the located error: $(grep -o 'content/[^<]*' "$W.body" | head -n 2)"
    # the old page stays served (and the output unchanged); the terminal
    # printed the same line
    grep -qF '80 layers' "$W.body" || grep -qF '>80<' "$W.body" || grep -qF '80</' "$W.body" ||
        fail "the old page is not served"
    [ "$(cat "$W/p/site/articles/kv-cache/index.html")" = "$before" ] || fail "the output changed"
    grep -qF "$SRC:21:2: error: quoted 81, but layers = 80" "$W.serve.err" ||
        fail "the terminal did not print the error"
    # every page shows it
    get /
    grep -qF 'kvsite-overlay' "$W.body" || fail "/ does not show the overlay"
    # fixed: gone
    sed -i 's/`81 {= layers}`/`80 {= layers}`/' "$W/p/$SRC"
    wait_for "$PAGE" 'kvsite-overlay' absent
    get /
    if grep -qF 'kvsite-overlay' "$W.body"; then fail "/ still shows the overlay"; fi
    stop_serve
}

t_traversal_refused() {
    project
    printf 'secret-%s\n' outside >"$W/secret.txt"
    start_serve "$W/p" || return
    ln -s "$W/secret.txt" "$W/p/site/leak.txt"
    ln -s "$W" "$W/p/site/up"
    local path
    for path in /../secret.txt /../../secret.txt /%2e%2e/secret.txt /%2e%2e/%2e%2e/secret.txt \
        /articles/%2e%2e/%2e%2e/secret.txt /%2E%2E%2Fsecret.txt /..%2fsecret.txt \
        /..%5csecret.txt /leak.txt /up/secret.txt /up/p/site.yaml /%2e%2e/site.yaml \
        /../site.yaml /articles/../../site.yaml; do
        get "$path"
        case $CODE in 403 | 404) ;; *) fail "$path: status $CODE" ;; esac
        if grep -qF -e secret-outside -e 'base_url' "$W.body"; then fail "$path: served a file outside"; fi
    done
    stop_serve
}

t_sigint_leaves_nothing() {
    project
    start_serve "$W/p" || return
    local pid=$SPID
    # Ctrl-C during a rebuild, with an event stream open
    curl -sN "${URL%/}/__kvsite/events" >/dev/null 2>&1 &
    local ev=$!
    echo "more text" >>"$W/p/$SRC"
    sleep 0.05
    stop_serve
    [ "$RC" = 0 ] || fail "serve exited $RC after SIGINT"
    sleep 0.2
    if pgrep -f -- "serve -C $W/p" >/dev/null; then fail "a kvsite process is left: $(pgrep -af -- "serve -C $W/p")"; fi
    if pgrep -P "$pid" >/dev/null; then fail "a child of serve is left"; fi
    kill "$ev" 2>/dev/null
    wait "$ev" 2>/dev/null
    # the locks are free: a build runs, and a serve starts again
    "$KVSITE" build -C "$W/p" >/dev/null 2>"$W.build.err" || fail "build after serve: $(tail -n 1 "$W.build.err")"
    start_serve "$W/p" && stop_serve
}

# Rebuilds run in serve's builder, a child forked before the HTTP threads
# start, one thread: a worker forked from a process whose other threads may
# hold an allocator's lock (AddressSanitizer's) can wait on it forever. serve
# has that one child; it is single-threaded, and the rebuild's pages come
# from it.
# The builder answers serve as soon as the output is published: the pages
# reload while it saves the cache and keeps its state (a site of 10,000
# pages waited 50-100 ms more for that). Its trace says when it answered.
t_reload_before_the_cache_is_saved() {
    project
    KVSITE_TRACE=1 start_serve "$W/p" || return
    sed -i 's/^# Sizing the cache/# Sizing the cache, told early/' "$W/p/$SRC"
    wait_for "$PAGE" "Sizing the cache, told early" || { stop_serve; return; }
    printf '\nA second save.\n' >>"$W/p/$SRC"
    wait_for "$PAGE" "A second save." || { stop_serve; return; }
    stop_serve
    # each rebuild (in the builder: all but the first build): published,
    # answered, then its cache saved
    local order
    order=$(grep -oE 'trace: (published|the builder answered serve|cache saved)' "$W.serve.err" |
        awk '/published/ { n++; a = 0 } /answered/ { a = 1 } /cache saved/ && n > 1 { printf "%s ", a ? "told" : "late"; told += a }
             END { print (told >= 2) ? "ok" : "too few" }')
    case $order in
    *late* | *"too few"*) fail "the builder answered serve after saving the cache: $order" ;;
    esac
}

t_rebuilds_in_the_builder() {
    project
    start_serve "$W/p" || return
    local kids builder threads
    kids=$(pgrep -P "$SPID" | tr '\n' ' ')
    builder=${kids%% *}
    [ -n "$builder" ] && [ "$kids" = "$builder " ] || { fail "serve's children: \"$kids\" (one builder expected)"; stop_serve; return; }
    threads=$(awk '/^Threads:/ {print $2}' "/proc/$builder/status")
    [ "$threads" = 1 ] || fail "the builder runs $threads threads"
    threads=$(awk '/^Threads:/ {print $2}' "/proc/$SPID/status")
    [ "$threads" -gt 1 ] || fail "serve itself runs $threads threads: is the HTTP server not threaded?"
    sed -i 's/^title: .*/title: Sizing the cache, built by the builder/' "$W/p/$SRC"
    wait_for /articles/kv-cache/ "Sizing the cache, built by the builder"
    stop_serve
    [ "$RC" = 0 ] || fail "serve exited $RC after SIGINT"
    if kill -0 "$builder" 2>/dev/null; then fail "the builder is left"; fi
}

t_second_serve_names_port() {
    project
    start_serve "$W/p" || return
    local first=$URL
    "$KVSITE" serve -C "$W/p" --port 0 </dev/null >/dev/null 2>"$W.second.err" &
    local second=$! i
    for ((i = 0; i < 200; i++)); do kill -0 "$second" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$second" 2>/dev/null; then
        kill -KILL "$second"
        fail "the second serve kept running"
    fi
    wait "$second"
    local rc=$?
    [ "$rc" = 2 ] || fail "second serve: exit $rc, expected 2"
    grep -qF "already served at $first" "$W.second.err" ||
        fail "second serve does not name $first: $(head -n 1 "$W.second.err")"
    stop_serve
}

t_build_after_serve_is_plain() {
    project
    start_serve "$W/p" || return
    sed -i 's/^# Sizing the cache/# Sizing the cache, served/' "$W/p/$SRC"
    wait_for "$PAGE" "Sizing the cache, served"
    sed -i 's/`80 {= layers}`/`81 {= layers}`/' "$W/p/$SRC"
    wait_for "$PAGE" 'kvsite-overlay'
    sed -i 's/`81 {= layers}`/`80 {= layers}`/' "$W/p/$SRC"
    wait_for "$PAGE" 'kvsite-overlay' absent
    stop_serve
    # the same sources, never served
    mkdir -p "$W/plain"
    cp -r "$W/p/content" "$W/p/templates" "$W/p/checks" "$W/p/site.yaml" "$W/plain/"
    "$KVSITE" build -C "$W/p" >/dev/null 2>"$W.b1.err" || fail "build after serve failed"
    "$KVSITE" build -C "$W/plain" >/dev/null 2>"$W.b2.err" || fail "plain build failed"
    if ! diff -r "$W/p/site" "$W/plain/site" >"$W.diff"; then
        fail "the output after serve differs from a plain build"
        DIFFS+="$(head -n 20 "$W.diff" | sed 's/^/    | /')"$'\n'
    fi
    # serve's state is in .kvsite/ only
    local extra
    extra=$(cd "$W/p" && ls -A | grep -vxE 'content|templates|checks|site.yaml|site|\.kvsite')
    [ -z "$extra" ] || fail "serve left files in the project: $extra"
}

t_base_path() {
    project
    sed -i 's|^base_url:.*|base_url: "https://example.org/docs/"|' "$W/p/site.yaml"
    grep -q '^base_url: "https://example.org/docs/"' "$W/p/site.yaml" ||
        echo 'base_url: "https://example.org/docs/"' >>"$W/p/site.yaml"
    start_serve "$W/p" || return
    case $URL in */docs/) ;; *) fail "the address lacks the base path: $URL" ;; esac
    get /docs/articles/kv-cache/
    [ "$CODE" = 200 ] || fail "/docs/articles/kv-cache/: status $CODE"
    get /articles/kv-cache/
    [ "$CODE" = 404 ] || fail "outside the base path: status $CODE"
    stop_serve
}

# A theme the site starts using while it is served (site.yaml gets `theme:
# default`) is watched from then on: an edit of the theme's stylesheet shows.
# The binary runs from an installed layout of its own (<prefix>/bin and
# <prefix>/share/kvsite), so the theme edited is a copy, not the repository's.
t_theme_taken_up_while_serving() {
    project
    local inst=$W/inst
    mkdir -p "$inst/bin" "$inst/share/kvsite"
    cp "$KVSITE" "$inst/bin/kvsite"
    cp -r "$ROOT/share/theme" "$inst/share/kvsite/theme"
    cp -r "$ROOT/checks" "$inst/share/kvsite/checks"
    local saved=$KVSITE
    KVSITE=$inst/bin/kvsite
    start_serve "$W/p" || { KVSITE=$saved; return; }
    KVSITE=$saved
    get /assets/theme.css
    [ "$CODE" = 404 ] || fail "the site served the theme before it used it ($CODE)"
    printf 'theme: default\n' >>"$W/p/site.yaml"
    wait_for /assets/theme.css "--" || { stop_serve; return; }
    printf '\n/* edited while serving */\n' >>"$inst/share/kvsite/theme/assets/theme.css"
    wait_for /assets/theme.css "edited while serving"
    stop_serve
}

# Serve keeps each build's records for the next (build_keep): after edits
# of one page, then another's figure (the report reads every page's figures,
# the kept ones from the kept figure store), then the first again, the
# output serve left is the one a build of the same sources writes.
t_rebuilds_match_a_fresh_build() {
    project
    start_serve "$W/p" || return
    local notes=content/notes/week-1.md
    sed -i 's/^# Sizing the cache/# Sizing the cache, one/' "$W/p/$SRC"
    wait_for "$PAGE" "Sizing the cache, one" || { stop_serve; return; }
    sed -i 's/`50% {= 4\/8}`/`25% {= 2\/8}`/' "$W/p/$notes"
    wait_for /notes/week-1/ "25%" || { stop_serve; return; }
    wait_for /checks/ "25%" || { stop_serve; return; }
    sed -i 's/Sizing the cache, one/Sizing the cache, two/' "$W/p/$SRC"
    wait_for "$PAGE" "Sizing the cache, two" || { stop_serve; return; }
    printf '\nA line written while serving.\n' >>"$W/p/$notes"
    wait_for /notes/week-1/ "A line written while serving." || { stop_serve; return; }
    stop_serve
    equals_fresh_build
}

# serve moves the front matter of unchanged pages out of the last build's
# index instead of decoding it: edits of front matter, of bodies only and of
# site.yaml (which changes how every page is parsed) in turn, then the output
# equals a fresh build's
t_front_matter_edits_match_a_fresh_build() {
    project
    start_serve "$W/p" || return
    local notes=content/notes/week-1.md
    sed -i 's/^title: Week 1$/title: Week one/' "$W/p/$notes"
    wait_for /notes/ "Week one" || { stop_serve; return; }
    printf '\nA body line, the front matter as it was.\n' >>"$W/p/$SRC"
    wait_for "$PAGE" "A body line, the front matter as it was." || { stop_serve; return; }
    sed -i 's/^tags: \[kv-cache\]$/tags: [kv-cache, meeting]/' "$W/p/$notes"
    wait_for /tags/meeting/ "Week one" || { stop_serve; return; }
    sed -i 's/^title: Fixture site$/title: The fixture, named again/' "$W/p/site.yaml"
    wait_for /notes/ "The fixture, named again" || { stop_serve; return; }
    sed -i 's/^title: Week one$/title: Week one, again/' "$W/p/$notes"
    wait_for /notes/ "Week one, again" || { stop_serve; return; }
    printf '\nA second body line.\n' >>"$W/p/$SRC"
    wait_for "$PAGE" "A second body line." || { stop_serve; return; }
    stop_serve
    equals_fresh_build
}

# serve stamps only the files inotify named (and the folders they are in):
# after saves that write in place, rename over (leaving a backup), add a page
# and remove one, a build from the command line finds the site up to date,
# which it does only when serve's stamp is the one a walk of every file
# gives; then a fresh build equals what serve left
t_stamp_of_what_changed_is_a_full_stamp() {
    project
    KVSITE_TRACE=1 start_serve "$W/p" || return
    local notes=content/notes/week-1.md
    printf '\nWritten in place.\n' >>"$W/p/$notes"
    wait_for /notes/week-1/ "Written in place." || { stop_serve; return; }
    cp "$W/p/$SRC" "$W/p/$SRC~"
    sed 's/^# Sizing the cache/# Sizing the cache, renamed over/' "$W/p/$SRC" >"$W/p/$SRC.new"
    mv "$W/p/$SRC.new" "$W/p/$SRC"
    wait_for "$PAGE" "Sizing the cache, renamed over" || { stop_serve; return; }
    printf -- '---\ntitle: Week 2\ndate: 2026-01-15\n---\nA page added while serving.\n' \
        >"$W/p/content/notes/week-2.md"
    wait_for /notes/week-2/ "A page added while serving." || { stop_serve; return; }
    rm "$W/p/content/notes/week-2.md"
    wait_for /notes/ "Week 2" absent || { stop_serve; return; }
    stop_serve
    grep -q "input stamp (what changed)" "$W.serve.err" ||
        fail "no rebuild stamped only what changed"
    "$KVSITE" build -C "$W/p" >"$W.cli.out" 2>"$W.cli.err" || fail "the build after serve failed"
    grep -q "kvsite: up to date" "$W.cli.err" ||
        fail "the build after serve was not up to date: $(tail -n 1 "$W.cli.err")"
    equals_fresh_build
}

# serve's rebuilds publish by the same swap as a build: the staging folder,
# the output before last, becomes the output. A copy there changed since
# (not by kvsite) is replaced by the output's file, not published, also for
# the pages serve keeps from its last build in memory
t_staging_copy_checked_while_serving() {
    project
    start_serve "$W/p" || return
    local prev=$W/p/.kvsite/site.prev step
    for step in 1 2 3; do
        printf '\nEdit %s while serving.\n' "$step" >>"$W/p/$SRC"
        wait_for "$PAGE" "Edit $step while serving." || { stop_serve; return; }
        [ -f "$prev/notes/week-1/index.html" ] ||
            { fail "step $step: no staging copy of /notes/week-1/"; stop_serve; return; }
        grep -q "planted" "$W/p/site/notes/week-1/index.html" &&
            { fail "step $step: a changed staging copy was published"; stop_serve; return; }
        printf '<p>planted %s</p>\n' "$step" >>"$prev/notes/week-1/index.html"
    done
    stop_serve
    grep -q "planted" "$W/p/site/notes/week-1/index.html" &&
        fail "a changed staging copy was published"
    equals_fresh_build
}

run_cases "${BASH_SOURCE[0]}" "$@"
