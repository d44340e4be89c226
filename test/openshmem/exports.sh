#!/bin/sh
# exports.sh LIB INCDIR CC: libpami-shmem exports only shmem_*, shmemx_*
# and the pre-1.2 names, and defines every routine shmem.h and shmemx.h
# declare (a program calling a declared routine links).
set -u
lib=$1 inc=$2 cc=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
# AddressSanitizer adds an __odr_asan.<name> for each exported variable.
nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^__odr_asan\.' |
    sort -u > "$dir/defined"
bad=$(grep -vE '^(shmem_|shmemx_|start_pes$|_my_pe$|_num_pes$|shmalloc$|shfree$|shrealloc$|shmemalign$)' "$dir/defined")
if [ -n "$bad" ]; then
    echo "exports.sh: exported beyond the OpenSHMEM names:" $bad >&2
    exit 1
fi
printf '#include <shmem.h>\n#include <shmemx.h>\n' |
    $cc -E -P -I"$inc" - |
    grep -oE '\b(shmemx?_[a-z0-9_]+|start_pes|_my_pe|_num_pes|shmalloc|shfree|shrealloc|shmemalign)[[:space:]]*\(' |
    tr -d '( \t' | sort -u > "$dir/declared"
n=$(wc -l < "$dir/declared")
missing=$(comm -23 "$dir/declared" "$dir/defined")
if [ -n "$missing" ]; then
    echo "exports.sh: declared, not defined:" $missing >&2
    exit 1
fi
[ "$n" -gt 1000 ] || { echo "exports.sh: only $n declarations read" >&2; exit 1; }
echo "exports.sh: $n routines declared, all defined; exports are OpenSHMEM names only"
