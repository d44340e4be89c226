#!/bin/sh
# wrapper_test.sh OSHCC OSHRUN SOURCE N: compiles SOURCE with OSHCC (PIE,
# as the toolchain's default), runs it with OSHRUN -n N, and passes when
# the program says "ok". Also checks that --showme prints a command.
set -u
oshcc=$1 oshrun=$2 src=$3 n=$4
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
"$oshcc" --showme -o x x.c | grep -q -- '-lpami-shmem' ||
    { echo "wrapper_test: --showme has no -lpami-shmem" >&2; exit 1; }
"$oshcc" -O2 -fPIE -pie -o "$dir/prog" "$src" || exit 1
out=$("$oshrun" -n "$n" --timeout 30 "$dir/prog" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "of $n PEs: ok"
