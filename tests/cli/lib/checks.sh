# The CLI tests' check helpers, one copy for every tests/cli/*.sh. Source it after setting W (the
# wxcast binary) and T (the test's temp folder); it starts the pass/fail counters at 0.
#   check WHAT STATUS        counts STATUS (0 = pass); prints "FAIL: WHAT" otherwise. A $(...)
#                            in WHAT resets $?: take `st=$?` first and pass $st
#   ok WHAT EXPRESSION       the same for `eval EXPRESSION`
#   run ARGS...              runs "$W" ${run_flags[@]} ARGS; sets rc, out, err (stdout/stderr
#                            also stay in $T/out and $T/err)
#   fails CODE WHAT PAT...   the last run exited CODE with exactly one "wxcast: error: " line
#                            on stderr containing every PAT (fixed strings)
#   usage_error WHAT PAT...  fails 2 ...
#   checks_summary           prints "N passed, M failed"; its status is 0 when nothing failed
pass=0
fail=0
check() {
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
ok() {
    if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
run() {
    "$W" ${run_flags[@]+"${run_flags[@]}"} "$@" >"$T/out" 2>"$T/err"
    rc=$?
    out=$(cat "$T/out")
    err=$(cat "$T/err")
}
fails() {
    local code="$1" what="$2"; shift 2
    [ "$rc" -eq "$code" ]; check "$what: exit $code (got $rc: $err)" $?
    [ "$(wc -l <"$T/err")" -eq 1 ] && [[ "$err" == "wxcast: error: "* ]]
    check "$what: one 'wxcast: error:' line (got: $err)" $?
    local p
    for p in "$@"; do
        grep -qF -- "$p" "$T/err"; check "$what: names '$p' (got: $err)" $?
    done
}
usage_error() {
    fails 2 "$@"
}
checks_summary() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
