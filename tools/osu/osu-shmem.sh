#!/bin/sh
# Builds the public OSU OpenSHMEM micro-benchmarks, unmodified, with any
# OpenSHMEM compiler wrapper, and runs them. The OSU sources stay outside
# this repository (never vendored): pass the folder that holds their c/.
#
#   osu-shmem.sh build OSHCC OSU_SRC OUT_DIR
#       compiles c/openshmem/osu_oshm_*.c with c/util/osu_util*.c into
#       OUT_DIR; extra compiler flags come from OSU_CFLAGS (the reference
#       OSSS-UCX needs OSU_CFLAGS=-no-pie). The macros are those OSU's own
#       configure defines for an OpenSHMEM library of 1.3 or later.
#   osu-shmem.sh run OUT_DIR LAUNCHER...
#       runs each benchmark of OSU_BENCHES (default: the list below) as
#       LAUNCHER OUT_DIR/bench ARGS, e.g. "oshrun -n 2" or
#       "mpiexec --allow-run-as-root --oversubscribe -n 2". Each
#       benchmark's output goes to RESULTS/NAME[-ARG].out (RESULTS is
#       $OSU_RESULTS, else OUT_DIR) and to stdout; a
#       benchmark that fails is named and the script goes on, exiting 1
#       at the end. The message-rate ones allocate 200 MiB of symmetric
#       heap: run with SHMEM_SYMMETRIC_SIZE=256M (the script exports it
#       when unset).
set -u

BENCHES_DEFAULT="put:heap put:global get:heap get:global put_mr:heap put_nb:heap get_nb:heap \
put_mr_nb:heap get_mr_nb:heap atomics:heap barrier broadcast reduce collect fcollect"

die() { echo "osu-shmem: $*" >&2; exit 2; }

build() {
    [ $# -eq 3 ] || die "usage: build OSHCC OSU_SRC OUT_DIR"
    cc=$1 src=$2 out=$3
    [ -f "$src/c/util/osu_util.c" ] || die "$src has no c/util/osu_util.c"
    mkdir -p "$out" || die "cannot create $out"
    fails=0
    for f in "$src"/c/openshmem/osu_oshm_*.c; do
        name=$(basename "$f" .c)
        # shellcheck disable=SC2086 # OSU_CFLAGS is a list of flags
        if ! $cc ${OSU_CFLAGS:-} -O2 -DOSHM_1_3=1 -DFIELD_WIDTH=18 \
                -DFLOAT_PRECISION=2 -I"$src/c/util" -o "$out/$name" "$f" \
                "$src/c/util/osu_util.c" "$src/c/util/osu_util_pgas.c" -lm \
                >"$out/$name.build.log" 2>&1; then
            echo "osu-shmem: build of $name failed (see $out/$name.build.log)" >&2
            fails=$((fails + 1))
        fi
    done
    echo "osu-shmem: built into $out, $fails failed"
    [ $fails -eq 0 ]
}

run() {
    [ $# -ge 2 ] || die "usage: run OUT_DIR LAUNCHER..."
    out=$1; shift
    export SHMEM_SYMMETRIC_SIZE="${SHMEM_SYMMETRIC_SIZE:-256M}"
    results=${OSU_RESULTS:-$out}
    mkdir -p "$results" || die "cannot create $results"
    fails=0
    for b in ${OSU_BENCHES:-$BENCHES_DEFAULT}; do
        name=osu_oshm_${b%%:*}
        arg=
        case $b in *:*) arg=${b#*:} ;; esac
        file=$results/$name${arg:+-$arg}.out
        echo "### $name $arg"
        # shellcheck disable=SC2086
        if ! timeout "${OSU_TIMEOUT:-300}" "$@" "$out/$name" $arg \
                >"$file" 2>&1; then
            echo "osu-shmem: $name $arg failed" >&2
            fails=$((fails + 1))
        fi
        cat "$file"
    done
    [ $fails -eq 0 ]
}

[ $# -ge 1 ] || die "usage: osu-shmem.sh build|run ..."
cmd=$1; shift
case $cmd in
    build) build "$@" ;;
    run) run "$@" ;;
    *) die "unknown command $cmd" ;;
esac
