#!/usr/bin/env bash
# Runs the libFuzzer targets of a -Dfuzz=true build, one after the other,
# each for SECONDS, starting from its seed corpus in the tree (which is
# never written: new inputs go to BUILD/test/fuzz/work/<target>). Prints
# one summary line per target and writes them to BUILD/test/fuzz/summary.
# Exits non-zero if any target crashed, leaked, timed out or did not run;
# the input that did it is in BUILD/test/fuzz/artifacts/.
#
#   test/fuzz/run.sh BUILD SECONDS [TARGET...]     (TARGET: am, svd, ...)
set -u
build=${1:?usage: run.sh BUILD SECONDS [TARGET...]}
seconds=${2:?usage: run.sh BUILD SECONDS [TARGET...]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
bindir=$build/test/fuzz
if [ $# -eq 0 ]; then
    set -- $(cd "$bindir" && ls fuzz_* 2>/dev/null | grep -v '\.' |
             sed 's/^fuzz_//' | sort)
fi
if [ $# -eq 0 ]; then
    echo "fuzz: no targets in $bindir (build with -Dfuzz=true)" >&2
    exit 1
fi
mkdir -p "$bindir/work" "$bindir/artifacts" "$bindir/logs"
summary=$bindir/summary
: >"$summary"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/../adapters/lsan.supp}
failed=0
printf '%-10s %-6s %12s %10s %8s %8s %7s\n' target result executions \
    'exec/s' cov features seconds | tee -a "$summary"
for t in "$@"; do
    bin=$bindir/fuzz_$t
    seeds=$here/corpus/$t
    work=$bindir/work/$t
    log=$bindir/logs/$t.log
    mkdir -p "$work"
    start=$(date +%s.%N)
    # -timeout: one input taking over 10 s is a hang; the outer timeout
    # catches a target that stops answering altogether.
    timeout -k 5 $((seconds + 120)) nice "$bin" -max_total_time="$seconds" \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$bindir/artifacts/$t-" "$work" "$seeds" \
        >"$log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    result=ok
    if [ $rc -ne 0 ] || [ -z "$execs" ]; then
        result=FAIL
        failed=$((failed + 1))
    fi
    printf '%-10s %-6s %12s %10s %8s %8s %7.1f\n' "$t" "$result" \
        "${execs:--}" "${rate:--}" "${cov:--}" "${ft:--}" \
        "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" | tee -a "$summary"
    if [ "$result" = FAIL ]; then
        echo "--- $t (exit $rc), last lines of $log:"
        tail -30 "$log"
        ls "$bindir/artifacts/$t-"* 2>/dev/null | sed 's/^/artifact: /'
    fi
done
echo "fuzz: $(( $# - failed )) of $# targets ran clean for ${seconds}s each"
[ $failed -eq 0 ]
