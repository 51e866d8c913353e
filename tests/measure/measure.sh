#!/usr/bin/env bash
# make measure: reproduce the site's llama.cpp memory logs on this machine.
#
# 1. fetch two pinned npm packages with `npm pack` (no install, no scripts) and check their
#    integrity hashes: @node-llama-cpp/linux-x64 (prebuilt llama.cpp CPU libraries) and
#    node-llama-cpp (llama/gitRelease.bundle: the llama.cpp source of that build, for the
#    headers);
# 2. compile tests/measure/kvmeasure.cpp against those libraries;
# 3. write one synthetic zero-weight GGUF per preset (tests/measure/synth_gguf.py);
# 4. run kvmeasure on each at three context lengths x f16/q8_0/q4_0 caches and store the
#    raw logs and a manifest (llamacpp-reproduced.yaml) in checks/measurements/.
# Everything but the logs and the manifest stays under build/measure/ (never committed).
# Needs: npm, git, g++, python3, network for step 1 (once; the packages are cached).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=${MEASURE_DIR:-$ROOT/build/measure}
OUT=${MEASURE_OUT:-$ROOT/checks/measurements}
HERE=$ROOT/tests/measure

# pinned packages: name@version and the npm registry's integrity (sha512) of the tarball
BIN_PKG=@node-llama-cpp/linux-x64@3.22.1
BIN_SHA='sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg=='
SRC_PKG=node-llama-cpp@3.22.1
SRC_SHA='sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw=='
ENGINE_COMMIT=0ad4a86   # what the libraries report (llama_commit()); checked below

PRESETS="qwen2.5-7b llama-3.1-8b gemma-3-27b deepseek-v2 qwen3-next-80b-a3b"
CTXS=4096,16384,32768
TYPES=f16,q8_0,q4_0
UBATCH=512
SEQS=1

die() { echo "make measure: $*" >&2; exit 1; }
for t in npm git g++ python3 tar; do
    command -v "$t" >/dev/null || die "needs $t"
done
[ "$(uname -m)" = x86_64 ] && [ "$(uname -s)" = Linux ] || die "the pinned libraries are Linux x86-64 only"
start=$(date +%s)
mkdir -p "$W/npm" "$W/models" "$OUT"

# -- 1. packages
# npm's integrity string: "sha512-" + base64 of the tarball's SHA-512
sri() { python3 -c 'import base64,hashlib,sys; print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$1"; }
fetch() { # spec integrity -> path of the checked tarball
    local spec=$1 want=$2 tgz
    tgz=$W/npm/$(echo "${spec#@}" | tr '/@' '--').tgz
    if [ ! -s "$tgz" ] || [ "$(sri "$tgz")" != "$want" ]; then
        local got
        got=$(cd "$W/npm" && npm pack --silent --ignore-scripts "$spec" | tail -1)
        [ "$W/npm/$got" = "$tgz" ] || mv "$W/npm/$got" "$tgz"
    fi
    [ "$(sri "$tgz")" = "$want" ] || die "$spec: integrity $(sri "$tgz"), expected $want"
    echo "$tgz"
}
BIN_TGZ=$(fetch "$BIN_PKG" "$BIN_SHA")
SRC_TGZ=$(fetch "$SRC_PKG" "$SRC_SHA")
echo "make measure: packages checked ($BIN_PKG, $SRC_PKG)"

LIB=$W/lib
if [ ! -f "$LIB/.ok" ]; then
    rm -rf "$LIB" "$W/unpack" && mkdir -p "$LIB" "$W/unpack"
    tar -xzf "$BIN_TGZ" -C "$W/unpack" package/bins/linux-x64
    cp "$W/unpack"/package/bins/linux-x64/lib*.so "$LIB/"
    touch "$LIB/.ok"
fi
SRC=$W/llama.cpp
if [ ! -f "$SRC/.ok" ]; then
    rm -rf "$SRC" && mkdir -p "$W/unpack"
    tar -xzf "$SRC_TGZ" -C "$W/unpack" package/llama/gitRelease.bundle
    # only the headers are needed: no work tree beyond include/, ggml/include/, common/
    git clone -q --no-checkout "$W/unpack/package/llama/gitRelease.bundle" "$SRC"
    git -C "$SRC" -c advice.detachedHead=false checkout -q HEAD -- include ggml/include common
    touch "$SRC/.ok"
fi

# -- 2. the driver
KVM=$W/kvmeasure
if [ ! -x "$KVM" ] || [ "$HERE/kvmeasure.cpp" -nt "$KVM" ]; then
    g++ -std=c++17 -O1 -Wall -Wextra -I"$SRC/include" -I"$SRC/ggml/include" -I"$SRC/common" \
        -o "$KVM" "$HERE/kvmeasure.cpp" -L"$LIB" -l:libllama-common.so -l:libllama.v0.5.0.so \
        -l:libggml.v0.5.0.so -l:libggml-base.so -Wl,-rpath,"$LIB"
fi
BACKEND=$LIB/libggml-cpu-x64.so # the baseline x86-64 CPU build: the same on every machine

# -- 3 and 4. models and runs
CMDS=()
for p in $PRESETS; do
    python3 "$HERE/synth_gguf.py" "$p" "$W/models/$p.gguf"
    log=$OUT/llamacpp-$p.log
    cmd=(kvmeasure -m "models/$p.gguf" -c "$CTXS" -ct "$TYPES" -ub "$UBATCH" -np "$SEQS" --backend lib/libggml-cpu-x64.so)
    CMDS+=("$p|${cmd[*]}")
    {
        echo "# Reproduced by make measure (tests/measure/measure.sh) on this machine: raw llama.cpp"
        echo "# log, $p-shaped synthetic model. Provenance: llamacpp-reproduced.yaml."
        (cd "$W" && "$KVM" "${cmd[@]:1}" 2>&1)
    } > "$log.tmp" || { tail -5 "$log.tmp" >&2; die "$p: kvmeasure failed (log: $log.tmp)"; }
    mv "$log.tmp" "$log"
    echo "make measure: $p: $(grep -c 'llama_kv_cache: size' "$log") cache lines -> ${log#$ROOT/}"
done
grep -q "llama.cpp build [0-9]* ($ENGINE_COMMIT)" "$OUT/llamacpp-qwen2.5-7b.log" ||
    die "the libraries do not report commit $ENGINE_COMMIT"

# -- the manifest: a measurement record (checks/README.md) naming every log
cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//' || true)
y() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
{
    echo "# Reproduced here: written by make measure (tests/measure/measure.sh) from the raw logs"
    echo "# beside it. Do not edit: run make measure again. How to compare: tests/measure/README.md."
    echo "provenance:"
    echo "  evidence: reproduced"
    echo "  machine: $(y "${cpu:-unknown CPU}, $(nproc) cores, $(uname -sm); CPU backend libggml-cpu-x64.so")"
    echo "  engine: \"llama.cpp\""
    echo "  build: $(y "$ENGINE_COMMIT (ggml-org/llama.cpp; prebuilt libraries of $BIN_PKG, headers from $SRC_PKG llama/gitRelease.bundle)")"
    echo "  model: \"synthetic zero-weight GGUF v3 files with each preset's cache shape (tests/measure/synth_gguf.py)\""
    echo "  date: \"$(date -u +%Y-%m-%d)\""
    echo "  source: \"make measure (tests/measure/measure.sh)\""
    echo "  packages: $(y "$BIN_PKG $BIN_SHA; $SRC_PKG $SRC_SHA")"
    echo "logs:"
    for c in "${CMDS[@]}"; do
        p=${c%%|*}
        echo "  $p:"
        echo "    what: $(y "llama.cpp contexts of a $p-shaped model: n_ctx $CTXS x cache types $TYPES (K and V alike), n_ubatch $UBATCH, $SEQS sequence")"
        echo "    command: $(y "${c#*|}")"
        echo "    format: \"llamacpp.contexts\""
        echo "    file: \"measurements/llamacpp-$p.log\""
    done
} > "$OUT/llamacpp-reproduced.yaml"
echo "make measure: done in $(( $(date +%s) - start )) s; manifest ${OUT#$ROOT/}/llamacpp-reproduced.yaml"
