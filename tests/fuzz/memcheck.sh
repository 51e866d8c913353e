#!/usr/bin/env bash
# Builds a site under valgrind (memcheck) and fails on any memory error or
# definite leak, in the parent and in every worker process:
#   KVSITE=build/kvsite bash tests/fuzz/memcheck.sh
#
# Two builds, both with -j 1 (one worker, so reports stay readable):
#   1. the bundled site (content/ of the project), or tests/fixtures/good when
#      content/ has no page yet, or else tests/fixtures/hostile-base;
#   2. tests/fixtures/hostile-base with pages that fail in the usual ways (a
#      Lua error, a runaway loop, a wrong figure, a broken link, bad front
#      matter), so the error paths are checked too; it must exit 1.
# Each runs on a copy in a temporary folder, output there too, with
# limits.page_timeout raised and limits.worker_memory off (valgrind is 20-50
# times slower and needs address space of its own). The project is not touched.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
kvsite=${KVSITE:-$top/build/kvsite}
case $kvsite in /*) ;; *) kvsite=$PWD/$kvsite ;; esac
if [ ! -x "$kvsite" ]; then
    echo "memcheck: $kvsite is not built (make build/kvsite)" >&2
    exit 2
fi
if ! command -v valgrind >/dev/null; then
    echo "memcheck: installing valgrind"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind; } >/dev/null ||
        { echo "memcheck: cannot install valgrind" >&2; exit 2; }
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsite-memcheck.XXXXXX")
trap '[ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT

# copy_project SRC DST: the inputs of a build, with limits for valgrind.
copy_project() {
    mkdir -p "$2"
    local d
    for d in content templates checks site.yaml; do
        [ -e "$1/$d" ] && cp -a "$1/$d" "$2/"
    done
    touch "$2/site.yaml"
    # set page_timeout and worker_memory under limits: (indented like the
    # block's first key), dropping any value the site had
    awk -v keys='page_timeout: 3600|worker_memory: 0' '
        function put(ind,   n, k, i) { n = split(keys, k, "|"); for (i = 1; i <= n; i++) print ind k[i] }
        need && /^[ \t]+[^ \t]/ { match($0, /^[ \t]+/); put(substr($0, 1, RLENGTH)); need = 0 }
        need { put("  "); need = 0 }
        /^[^ \t#]/ { inlim = 0 }
        /^limits:[ \t]*$/ { print; inlim = 1; need = 1; done = 1; next }
        inlim && ($1 == "page_timeout:" || $1 == "worker_memory:") { next }
        { print }
        END { if (need) put("  "); if (!done) { print "limits:"; put("  ") } }' "$2/site.yaml" >"$2/site.yaml.new"
    mv "$2/site.yaml.new" "$2/site.yaml"
}

# memcheck NAME EXPECTED_STATUS DIR: one build under valgrind.
status=0
memcheck() {
    local name=$1 want=$2 dir=$3
    mkdir -p "$tmp/logs/$name"
    local start=$SECONDS
    # kvsite's malloc is tcmalloc's (Makefile, ALLOC): valgrind replaces it as
    # it does libc's, and knows the one block tcmalloc keeps for itself
    (cd "$dir" && valgrind --leak-check=full --show-leak-kinds=definite \
        --soname-synonyms=somalloc='*tcmalloc*' --suppressions="$here/tcmalloc.supp" \
        --errors-for-leak-kinds=definite --error-exitcode=1 --trace-children=yes \
        --child-silent-after-fork=no --log-file="$tmp/logs/$name/vg.%p.log" \
        "$kvsite" build -j 1 -o "$dir/../out-$name") >"$tmp/logs/$name/build.txt" 2>&1
    local rc=$? bad=0 f
    for f in "$tmp/logs/$name"/vg.*.log; do
        if ! grep -q 'ERROR SUMMARY: 0 errors' "$f"; then
            bad=1
            echo "memcheck $name: valgrind reports in process $(basename "$f" .log | cut -d. -f2):"
            grep -E '^==[0-9]+== ' "$f" | sed -n '/Invalid\|uninitialised\|definitely lost\|Mismatched\|overlap\|Syscall param/,/^==[0-9]*== $/p' | head -40
        fi
    done
    local procs
    procs=$(ls "$tmp/logs/$name"/vg.*.log | wc -l)
    if [ $bad -eq 0 ] && [ "$rc" -eq "$want" ]; then
        echo "ok memcheck $name: exit $rc, $procs processes, no errors, no definite leaks ($((SECONDS - start)) s)"
        echo "    $(grep -m1 '^kvsite: ' "$tmp/logs/$name/build.txt")"
    else
        [ "$rc" -eq "$want" ] || echo "memcheck $name: exit status $rc, expected $want"
        sed 's/^/    | /' "$tmp/logs/$name/build.txt" | tail -15
        echo "FAIL memcheck $name"
        status=1
    fi
}

if find "$top/content" -name '*.md' -type f 2>/dev/null | grep -q .; then
    site=$top
    label=bundled-site
elif [ -d "$top/tests/fixtures/good/content" ]; then
    site=$top/tests/fixtures/good
    label=fixture-good
else
    site=$top/tests/fixtures/hostile-base
    label=hostile-base
fi
copy_project "$site" "$tmp/a/proj"
memcheck "$label" 0 "$tmp/a/proj"

copy_project "$top/tests/fixtures/hostile-base" "$tmp/b/proj"
p=$tmp/b/proj/content/notes
printf -- '---\ntitle: Lua error\n---\n```{lua}\nlocal x = nil + 1\n```\n' >"$p/err-lua.md"
printf -- '---\ntitle: Loop\n---\n```{lua}\nwhile true do end\n```\n' >"$p/err-loop.md"
printf -- '---\ntitle: Wrong\n---\nIt is `40 GB {= 40 * 2^30}` and [gone](missing.md) and [x](/nowhere/#y).\n' >"$p/err-figure.md"
printf -- '---\ntitle: [broken\n---\nx\n' >"$p/err-yaml.md"
printf -- '---\ntitle: Bomb\n---\n```{lua}\nlocal s = "x" for i = 1, 40 do s = s .. s end\n```\n' >"$p/err-memory.md"
memcheck failing-build 1 "$tmp/b/proj"
exit $status
