#!/bin/sh
# Builds a public OpenSHMEM unit test suite, unmodified, with any OpenSHMEM
# compiler wrapper, runs every program and tabulates the outcome. The suite
# stays outside this repository (never vendored): pass the folder that
# holds its test/ (e.g. a checkout of openshmem-org/tests-sos, the tests of
# Sandia OpenSHMEM).
#
#   openshmem-suite.sh build OSHCC OSHCXX SUITE_SRC OUT_DIR
#       compiles each test/unit/*.c with OSHCC and each *.cpp with OSHCXX
#       ("-" skips C++) into OUT_DIR, with -I test/include, -I of the
#       folder itself, -pthread, -lm
#       and SUITE_CFLAGS, as tests-sos's Makefile.am does: mt_lock.c is
#       linked into mt_lock_test (not built alone), and its two variants
#       are built too (query_thread_funneled: query_thread.c with
#       -DENABLE_THREADS; rma_coverage_pshmem: rma_coverage.c with
#       -DTEST_PSHMEM, the profiling names). A program that does not
#       compile or link is listed in OUT_DIR/build-failed (its log in
#       OUT_DIR/NAME.build.log). SUITE_DIR names another folder of
#       test/ to build instead of unit (e.g. spec-example, shmemx, apps).
#   openshmem-suite.sh run OUT_DIR LAUNCHER...
#       runs each built program as "LAUNCHER OUT_DIR/NAME" (e.g.
#       "oshrun -n 2") under "timeout SUITE_TIMEOUT" (default 60 s) and
#       prints one line per program, "NAME pass|fail RC|timeout|link-fail",
#       then the totals; the output of each run goes to
#       RESULTS/NAME.out (RESULTS is $SUITE_RESULTS, else OUT_DIR).
#       SUITE_TESTS, when set, names the programs to run.
#       SHMEM_SYMMETRIC_SIZE defaults to 256M (bigput/bigget need more
#       than 128M at 4 PEs). Exits 1 when any program did not pass.
set -u

die() { echo "openshmem-suite: $*" >&2; exit 2; }

build() {
    [ $# -eq 4 ] || die "usage: build OSHCC OSHCXX SUITE_SRC OUT_DIR"
    cc=$1 cxx=$2 src=$3/test/${SUITE_DIR:-unit} inc=$3/test/include out=$4
    [ -d "$src" ] || die "$3 has no test/${SUITE_DIR:-unit}"
    mkdir -p "$out" || die "cannot create $out"
    : >"$out/build-failed"
    for f in "$src"/*.c "$src"/*.cpp variant:query_thread_funneled \
            variant:rma_coverage_pshmem; do
        extra=
        case $f in
            variant:query_thread_funneled)
                comp=$cc name=${f#variant:} f=$src/query_thread.c
                extra=-DENABLE_THREADS ;;
            variant:rma_coverage_pshmem)
                comp=$cc name=${f#variant:} f=$src/rma_coverage.c
                extra=-DTEST_PSHMEM ;;
            */mt_lock.c) continue ;;
            */mt_lock_test.c) comp=$cc name=mt_lock_test
                extra=$src/mt_lock.c ;;
            *.cpp) [ "$cxx" = - ] && continue
                   comp=$cxx name=$(basename "$f" .cpp) ;;
            *) comp=$cc name=$(basename "$f" .c) ;;
        esac
        [ -f "$f" ] || continue
        # shellcheck disable=SC2086 # SUITE_CFLAGS and extra are lists
        if ! $comp ${SUITE_CFLAGS:-} -O2 -pthread -I"$inc" -I"$src" $extra \
                -o "$out/$name" "$f" -lm >"$out/$name.build.log" 2>&1; then
            echo "$name" >>"$out/build-failed"
            rm -f "$out/$name"
        fi
    done
    echo "openshmem-suite: built into $out," \
        "$(wc -l <"$out/build-failed") failed to build"
}

run() {
    [ $# -ge 2 ] || die "usage: run OUT_DIR LAUNCHER..."
    out=$1; shift
    export SHMEM_SYMMETRIC_SIZE="${SHMEM_SYMMETRIC_SIZE:-256M}"
    results=${SUITE_RESULTS:-$out}
    mkdir -p "$results" || die "cannot create $results"
    if [ -z "${SUITE_TESTS:-}" ]; then
        tests=
        for log in "$out"/*.build.log; do
            [ -f "$log" ] && tests="$tests $(basename "$log" .build.log)"
        done
    else
        tests=$SUITE_TESTS
    fi
    pass=0 fail=0 tmo=0 lnk=0
    for t in $tests; do
        if [ ! -x "$out/$t" ]; then
            echo "$t link-fail"; lnk=$((lnk + 1)); continue
        fi
        timeout -k 5 "${SUITE_TIMEOUT:-60}" "$@" "$out/$t" \
            >"$results/$t.out" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then echo "$t pass"; pass=$((pass + 1))
        elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            echo "$t timeout"; tmo=$((tmo + 1))
        else echo "$t fail $rc"; fail=$((fail + 1)); fi
    done
    echo "openshmem-suite: pass $pass, fail $fail, timeout $tmo, link-fail $lnk"
    [ $fail -eq 0 ] && [ $tmo -eq 0 ] && [ $lnk -eq 0 ]
}

[ $# -ge 1 ] || die "usage: openshmem-suite.sh build|run ..."
cmd=$1; shift
case $cmd in
    build) build "$@" ;;
    run) run "$@" ;;
    *) die "unknown command $cmd" ;;
esac
