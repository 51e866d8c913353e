#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ into build/fuzz/ and runs each
# for a bounded time: tests/fuzz/run.sh [SECONDS] (default 30 per target).
#
#   FUZZ_TARGETS="quote page"  only these targets
#   FUZZ_CC=clang-14           the compiler (clang with libFuzzer)
#
# The gen/ sources (without main.c) and the targets are compiled with clang
# under libFuzzer, ASan and UBSan. Seeds are assembled at run time into
# build/fuzz/seeds/<target>/: the hand-written ones in tests/fuzz/seeds/, the
# pages of content/ and tests/fixtures/, templates and data files, quotes taken
# from those pages, and one file per example of ../shared/spec (never copied
# into the repository); for arith, the figure expressions and {lua} blocks of
# those pages; for keep, the hand-written seeds only (template and page Lua
# that keep host objects). Inputs that once crashed, in
# tests/fuzz/regressions/<target>/, run first. New corpus entries accumulate in
# build/fuzz/corpus/<target>/, findings in build/fuzz/crashes/<target>/.
#
# Exit status 1 when a regression input or the fuzzer found a crash, a leak or
# undefined behaviour. A timeout (an input that runs past -timeout) is listed
# but not fatal: in a real build the pool's watchdog turns it into one error at
# the page; set FUZZ_STRICT=1 to fail on timeouts too.
set -u
secs=${1:-30}
case $secs in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$top/build/fuzz
spec=${SPEC_DIR:-$top/../shared/spec}
cc=${FUZZ_CC:-clang}
targets=${FUZZ_TARGETS:-quote frontmatter template page arith keep}

if ! command -v "$cc" >/dev/null || [ -z "$(find /usr/lib/llvm-*/lib/clang -name 'libclang_rt.fuzzer-*.a' 2>/dev/null)" ]; then
    # optional tools are installed by the target that uses them
    echo "fuzz: installing clang and libFuzzer"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-dev; } \
        >/dev/null 2>&1 || { echo "fuzz: cannot install clang with libFuzzer" >&2; exit 2; }
fi
# the libraries the Makefile links gen/ with (one list, there)
pkgs=$(make -s --no-print-directory -C "$top" print-link-pkgs) ||
    { echo "fuzz: cannot read the Makefile's libraries" >&2; exit 2; }
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
base="-std=c11 -D_GNU_SOURCE -g -O1 -DKVSITE_VERSION=\"fuzz\" $(pkg-config --cflags $pkgs)"
libs="$(pkg-config --libs $pkgs) -lcmark-gfm-extensions -lm"
mkdir -p "$out/obj" "$out/bin" "$out/logs"

# ---------- build ----------
newest_header=$(ls -t "$top"/gen/*.h | head -1)
objs=()
for src in "$top"/gen/*.c; do
    name=$(basename "$src" .c)
    [ "$name" = main ] && continue
    obj=$out/obj/$name.o
    objs+=("$obj")
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
        # gen/ belongs to others: warnings are shown, not fatal, under clang
        if ! $cc $base $san -fsanitize=fuzzer-no-link -Wall -Wextra -c "$src" -o "$obj"; then
            echo "fuzz: cannot compile gen/$name.c" >&2
            exit 2
        fi
    fi
done
# the tree-sitter grammars (not our code: as the Makefile compiles them)
make -C "$top" -s grammars >/dev/null || { echo "fuzz: cannot build the grammars (make deps?)" >&2; exit 2; }
objs+=("$top"/build/ts/*.o)
rm -f "$out/libkvsite-fuzz.a"
ar rcs "$out/libkvsite-fuzz.a" "${objs[@]}"
for t in $targets; do
    if ! $cc $base $san -fsanitize=fuzzer -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
        -I"$top/gen" "$here/fuzz_$t.c" "$out/libkvsite-fuzz.a" $libs -o "$out/bin/fuzz_$t"; then
        echo "fuzz: cannot build fuzz_$t" >&2
        exit 2
    fi
done

# ---------- seeds ----------
rm -rf "$out/seeds"
mkdir -p "$out/seeds"
for t in $targets; do mkdir -p "$out/seeds/$t"; done
n=0
seed() { # seed TARGET FILE: copies FILE as a seed of TARGET under a unique name
    [ -d "$out/seeds/$1" ] || return 0
    n=$((n + 1))
    cp "$2" "$out/seeds/$1/f$n-$(basename "$2")"
}
for t in $targets; do
    for f in "$here"/seeds/"$t"/*; do [ -f "$f" ] && seed "$t" "$f"; done
done
while IFS= read -r -d '' f; do
    seed page "$f"
    seed frontmatter "$f"
done < <(find "$top/content" "$top/tests/fixtures" -name '*.md' -type f -size -256k -print0 2>/dev/null)
while IFS= read -r -d '' f; do
    seed template "$f"
done < <(find "$top/templates" "$top/tests/fixtures" -name '*.html' -type f -size -256k \
    -not -path '*/expected/*' -print0 2>/dev/null)
while IFS= read -r -d '' f; do
    seed frontmatter "$f"
done < <(find "$top/checks" "$top/tests/fixtures" -type f -size -256k \
    \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' -o -name '*.csv' -o -name '*.txt' \) \
    -print0 2>/dev/null)
if [ -d "$out/seeds/quote" ]; then
    # every quote written in a page, with a plausible value: "224 MiB\n234881024\n"
    find "$top/content" "$top/tests/fixtures" -name '*.md' -type f -print0 2>/dev/null |
        xargs -0 -r grep -oh '`[^`{]*{[=≈~]' 2>/dev/null |
        sed 's/^`//; s/ *{.*$//' | sort -u | head -500 |
        awk -v dir="$out/seeds/quote" '{ f = dir "/q" NR; print $0 > f; print "1" > f; close(f) }'
fi
if [ -d "$out/seeds/arith" ]; then
    # every figure expression and {lua} block of the pages: "e" + EXPR, or the block
    find "$top/content" "$top/tests/fixtures" -name '*.md' -type f -print0 2>/dev/null |
        xargs -0 -r grep -oh '{[=≈~][^}`]*}' 2>/dev/null | sed 's/^{[=≈~][0-9.%]*//; s/}$//' |
        sort -u | head -500 |
        awk -v dir="$out/seeds/arith" '{ f = dir "/x" NR; printf "e%s", $0 > f; close(f) }'
    find "$top/content" "$top/tests/fixtures" -name '*.md' -type f -print0 2>/dev/null |
        xargs -0 -r awk -v dir="$out/seeds/arith" '
            /^```+ *\{lua\}/ { on = 1; k++; f = dir "/blk" k; printf "" > f; next }
            on && /^```/ { on = 0; close(f); next }
            on { print >> f }'
fi
if [ -d "$spec" ] && [ -d "$out/seeds/page" ]; then
    # one seed per spec example: the Markdown between the opening fence and "."
    for s in "$spec"/*.txt; do
        awk -v dir="$out/seeds/page" -v tag="$(basename "$s" .txt)" '
            /^```````````````````````````````` example/ { on = 1; k++; f = dir "/" tag "-" k; printf "" > f; next }
            on && /^\.$/ { on = 0; close(f); next }
            on { gsub(/→/, "\t"); print >> f }' "$s"
    done
elif [ -d "$out/seeds/page" ]; then
    echo "fuzz: no spec examples ($spec not found)"
fi

# ---------- regressions, then fuzzing ----------
status=0
summary=()
for t in $targets; do
    bin=$out/bin/fuzz_$t
    nreg=0
    : >"$out/logs/$t.regressions.log"
    for r in "$here"/regressions/"$t"/*; do
        [ -f "$r" ] || continue
        nreg=$((nreg + 1))
        mkdir -p "$out/tmp/$t"
        if ! TMPDIR=$out/tmp/$t "$bin" -timeout=20 "$r" >>"$out/logs/$t.regressions.log" 2>&1; then
            echo "fuzz_$t: FAIL: regression input $(basename "$r") fails again (see $out/logs/$t.regressions.log)"
            status=1
        fi
    done
    [ $nreg -eq 0 ] || echo "fuzz_$t: $nreg regression inputs run"
    mkdir -p "$out/corpus/$t" "$out/crashes/$t"
    seeds=$(find "$out/seeds/$t" -type f | wc -l)
    echo "fuzz_$t: fuzzing for ${secs}s ($seeds seeds)"
    # the targets make their scratch projects under TMPDIR; a crash skips
    # their clean-up, so each run gets a folder of its own, removed here
    rm -rf "$out/tmp/$t"
    mkdir -p "$out/tmp/$t"
    TMPDIR=$out/tmp/$t "$bin" "$out/corpus/$t" "$out/seeds/$t" -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2560 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$out/crashes/$t/" >"$out/logs/$t.log" 2>&1
    rc=$?
    rm -rf "$out/tmp/$t"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/logs/$t.log")
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/logs/$t.log")
    cov=$(grep -o 'cov: [0-9]*' "$out/logs/$t.log" | tail -1)
    art=$(sed -n "s/.*Test unit written to //p" "$out/logs/$t.log" | tail -1)
    if [ $rc -eq 0 ]; then
        summary+=("fuzz_$t: ${runs:-?} runs (${speed:-?}/s, ${cov:-cov: ?}), no crash")
    elif grep -q 'ERROR: libFuzzer: timeout' "$out/logs/$t.log" && [ "${FUZZ_STRICT:-0}" != 1 ]; then
        summary+=("fuzz_$t: timeout after ${runs:-?} runs: $art (see $out/logs/$t.log)")
    else
        summary+=("fuzz_$t: FAIL after ${runs:-?} runs: $art (see $out/logs/$t.log)")
        grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' "$out/logs/$t.log"
        status=1
    fi
done
printf '%s\n' "${summary[@]}"
exit $status
