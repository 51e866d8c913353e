# cases.sh: the case runner the end-to-end scripts share. Source it, define
# t_NAME functions that call fail "why" (and may add to DIFFS), then call
#   run_cases "${BASH_SOURCE[0]}" "$@"
# It runs every t_ function of that script (or the NAMEs given), prints
# `ok NAME` or `FAIL NAME: why` plus the diffs, then `N passed, N failed`, and
# returns 1 when a case failed.

# kvsite_under_test NAME: makes KVSITE absolute (default: build/kvsite under ROOT)
# and stops the script NAME with exit 2 when there is no binary there.
kvsite_under_test() {
    KVSITE=${KVSITE:-$ROOT/build/kvsite}
    case $KVSITE in /*) ;; *) KVSITE=$PWD/$KVSITE ;; esac
    if [ ! -x "$KVSITE" ]; then
        echo "$1: no kvsite binary at $KVSITE (make build/kvsite, or set KVSITE)" >&2
        exit 2
    fi
}

run_cases() {
    local script=$1 cases fn passed=0 failed=0
    shift
    cases=$(grep -oE '^t_[a-z0-9_]+\(\)' "$script" | sed 's/()$//')
    if [ $# -gt 0 ]; then
        cases=$(for c in "$@"; do echo "t_${c#t_}"; done)
    fi
    for fn in $cases; do
        CASE=${fn#t_}
        WHY="" DIFFS="" RC=0
        if ! declare -F "$fn" >/dev/null; then
            fail "no such case"
        else
            "$fn"
        fi
        if [ -z "$WHY" ]; then
            echo "ok $CASE"
            passed=$((passed + 1))
        else
            echo "FAIL $CASE: $WHY"
            [ -n "$DIFFS" ] && printf '%s' "$DIFFS"
            failed=$((failed + 1))
        fi
    done
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
