#!/bin/sh
# check_abi.sh BASELINE LIBRARY HEADERS_DIR: abidiff the library's public
# ABI (types from the installed headers only) against the committed
# baseline. Any difference fails: an addition needs the baseline updated,
# a break needs the baseline and the SONAME changed in the same commit
# (docs/abi.md).
set -u
baseline=$1 lib=$2 headers=$3
abidiff --headers-dir2 "$headers" "$baseline" "$lib"
rc=$?
[ $rc -eq 0 ] && { echo "ABI matches $baseline"; exit 0; }
# abidiff's status bits: 1 error, 2 usage, 4 changed, 8 incompatible.
if [ $((rc & 3)) -ne 0 ]; then
    echo "abidiff itself failed (status $rc)"
elif [ $((rc & 8)) -ne 0 ]; then
    echo "INCOMPATIBLE ABI change. If intended: bump pami_soversion in" \
         "meson.build and run 'make abi-baseline' in the same commit."
else
    echo "Compatible ABI change (an addition?): run 'make abi-baseline'" \
         "and commit test/abi/libpami.abi with it."
fi
exit 1
