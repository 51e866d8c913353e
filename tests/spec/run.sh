#!/usr/bin/env bash
# Runs the CommonMark and GFM spec examples of ../shared/spec through
# `kvsite render --unsafe` and requires at least what cmark-gfm passes alone
# (with the table, strikethrough, autolink and tasklist extensions).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
spec=${SPEC_DIR:-$top/../shared/spec}
kvsite=${KVSITE:-$top/build/kvsite}
out=${BUILD_DIR:-$top/build}
if [ ! -d "$spec" ]; then
    echo "spec: skipped: no folder $spec with the CommonMark and GFM spec files"
    echo "  (spec.txt, extensions.txt, regression.txt and smart_punct.txt, as cmark-gfm's"
    echo "  source tree has them under test/); point SPEC_DIR at such a folder to run them"
    echo "0 passed, 0 failed, 3 skipped"
    exit 0
fi
mkdir -p "$out"
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$out/spec_runner" "$here/spec_runner.c" || exit 1
status=0
passed=0
failed=0
for pair in spec.txt:665 extensions.txt:23 regression.txt:18; do
    file=${pair%%:*}
    min=${pair##*:}
    result=$("$out/spec_runner" "$spec/$file" "$min" "$kvsite" render --unsafe)
    rc=$?
    echo "$result" | grep -v '^[0-9]* passed' | grep -v '^example ' 
    p=$(echo "$result" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(echo "$result" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    passed=$((passed + p))
    failed=$((failed + f))
    if [ $rc -ne 0 ]; then
        echo "spec: $file: fewer examples pass than the library alone ($min)"
        echo "$result" | grep '^example '
        status=1
    fi
done
echo "spec examples: $passed match, $failed differ (the library differs on the same ones)"
if [ $status -eq 0 ]; then echo "3 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $status
