#!/usr/bin/env bash
# make check-html: every page of a built site through the Nu HTML checker (0 errors,
# 0 warnings) and axe-core in headless Chromium (0 serious or critical violations).
# Usage: tools/check-html.sh SITE_DIR. The tools come from `make deps`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
site=${1:?usage: check-html.sh SITE_DIR}
jar=$here/npm/node_modules/vnu-jar/build/dist/vnu.jar
for t in java node "${CHROMIUM:-chromium}"; do
    command -v "$t" >/dev/null || { echo "check-html: $t is missing: run make deps" >&2; exit 2; }
done
[ -f "$jar" ] && [ -d "$here/npm/node_modules/axe-core" ] ||
    { echo "check-html: the npm tools are missing: run make deps" >&2; exit 2; }
mapfile -t pages < <(find "$site" -name '*.html' | sort)
[ ${#pages[@]} -gt 0 ] || { echo "check-html: no pages under $site" >&2; exit 1; }
rc=0
# --Werror: a warning fails like an error. --no-langdetect: the checker guesses a
# page's language from its text, and a zh-CN table of model names and numbers
# (the models page) reads to it as Norwegian; lang attributes are ours to set
# (zh-CN on the page, lang="en" on English fragments), not a guess to match.
if ! java -jar "$jar" --Werror --no-langdetect --format gnu "${pages[@]}"; then
    rc=1
fi
echo "vnu: ${#pages[@]} pages checked"
node "$here/axe.js" "$site" "$(command -v "${CHROMIUM:-chromium}")" || rc=1
exit $rc
