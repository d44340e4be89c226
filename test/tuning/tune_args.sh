#!/bin/sh
# Program input of the tools: pami-tune refuses sizes that are not powers
# of two or that wrap when K or M scales them, and empty or unknown lists
# (exit 2 before anything runs); pami-info refuses unknown arguments, a
# --coll-profile without its file and a signed --shape, and gives a
# profile whose job is 2^24 nodes of 2^24 tasks the capped size, not the
# product wrapped to 0.
#   tune_args.sh PAMI_TUNE PAMI_INFO
set -u
TUNE=$1 INFO=$2
dir=$(mktemp -d /tmp/pami-tune-args.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "tune_args: FAIL: $*" >&2; exit 1; }

# --table runs only after every option parsed: a good option list reaches
# it (exit 1, no such file), a bad one stops before (exit 2).
for s in 3:8 8:12K 0:8 8:4 -8:8 18014398509481985K:1M 8:2199023255552; do
    "$TUNE" --sizes "$s" --table "$dir/none.json" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "--sizes $s: exit $rc, not 2"
done
for s in 8:4M 1:1 4K:1M 1099511627776:1099511627776; do
    "$TUNE" --sizes "$s" --table "$dir/none.json" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 1 ] || fail "--sizes $s: exit $rc, not 1 (no such file)"
done

for a in "--collectives ," "--collectives" "--collectives allreduce,nope" \
         "--shapes ," "--shapes world,nope" "--reps 0" "--deadline 0" \
         "--batch-us 0" "--batch-us 5x"; do
    # shellcheck disable=SC2086
    "$TUNE" $a --table "$dir/none.json" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "$a: exit $rc, not 2"
done
"$TUNE" --collectives barrier,allreduce --shapes world --table \
    "$dir/none.json" >/dev/null 2>&1
[ $? -eq 1 ] || fail "good lists refused"

cat > "$dir/big.json" <<'JSON'
{"format_version": 1, "producer": "tune_args",
 "machine": {"cpu": "x", "cores": 2, "nodes": 16777216,
             "tasks_per_node": 16777216},
 "entries": [
  {"collective": "allreduce", "algorithm": "allreduce_ring",
   "shape": {"size": 4, "nodes": 1, "tasks_per_node": 4},
   "type": "int32", "op": "sum", "bytes": 1024,
   "metrics": {"median_us": 5, "min_us": 4, "max_us": 6, "count": 3}}]}
JSON
"$INFO" --coll-profile "$dir/big.json" > "$dir/out.txt" 2>&1 ||
    fail "pami-info on the big job: exit $?"
grep -q 'geometry of 16777216 tasks on 1 node(s)' "$dir/out.txt" ||
    fail "pami-info: $(sed -n 2p "$dir/out.txt")"
for a in --bogus --coll-profile "--coll-profile $dir/big.json --shape" \
         "--coll-profile $dir/big.json --size 4"; do
    # shellcheck disable=SC2086
    "$INFO" $a >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "pami-info $a: exit $rc, not 2"
done
for s in 4x-1 -4 +4 4x 0 4x0 16777217; do
    "$INFO" --coll-profile "$dir/big.json" --shape "$s" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "--shape $s: exit $rc, not 2"
done
"$INFO" --coll-profile "$dir/big.json" --shape 8x4 > "$dir/s.txt" 2>&1 ||
    fail "--shape 8x4: exit $?"
grep -q 'geometry of 8 tasks on 2 node(s), at most 4 per node' "$dir/s.txt" ||
    fail "--shape 8x4: $(sed -n 2p "$dir/s.txt")"
echo "tune_args: ok"
