#!/bin/sh
# pami-tune end to end: a quick sweep as a job, --table and pami-info
# --coll-profile read it, a stopped sweep (SIGTERM to pamirun) leaves a
# valid partial profile that --resume completes, rounds and --merge,
# AUTO runs from the profile, and --plot draws when matplotlib is there.
#   tune_tool.sh PAMIRUN PAMI_TUNE PAMI_INFO TUNE_SELECT PAMI_BENCH
set -eu
PAMIRUN=$1 TUNE=$2 INFO=$3
dir=$(mktemp -d /tmp/pami-tune-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "tune_tool: FAIL: $*" >&2; exit 1; }

# Batches of 500 us (not 5 ms): the test checks the tool, not figures,
# and must stay short on a busy machine.
"$PAMIRUN" -n 3 --timeout 120 "$TUNE" --quick --no-progress --batch-us 500 \
    --collectives barrier,broadcast,allreduce,alltoall -o "$dir/p.json" ||
    fail "quick sweep"
# Every entry holds one look (--quick: 5 repetitions) or two (a near
# tie's second look, which takes two algorithms or more of a point).
python3 - "$dir/p.json" <<'PY' || fail "repetitions per entry"
import collections, json, sys
looks = collections.defaultdict(list)
for e in json.load(open(sys.argv[1]))["entries"]:
    if "metrics" in e:
        key = (e["collective"], e.get("type"), e.get("op"), e["bytes"])
        looks[key].append(e["metrics"]["count"])
for key, counts in looks.items():
    assert all(c in (5, 10) for c in counts), (key, counts)
    assert counts.count(10) != 1, (key, counts)
PY
"$TUNE" --table "$dir/p.json" > "$dir/table.txt" || fail "--table"
grep -q '^allreduce  3 tasks' "$dir/table.txt" || fail "no allreduce rows"
grep -q 'runner-up' "$dir/table.txt" || fail "no runner-up"
"$INFO" --coll-profile "$dir/p.json" --shape 3 > "$dir/info.txt" ||
    fail "pami-info --coll-profile"
grep -q 'allreduce (int32 and smaller), from the profile.s 3 tasks' \
    "$dir/info.txt" || fail "pami-info: no allreduce table"
"$INFO" --coll-profile "$dir/p.json" --shape 5x2 | grep -q 'nearest shape' ||
    fail "pami-info: 5x2 is not the nearest shape"

# Rounds (docs/tuning.md): --rounds 2 records two rounds, each with its
# start time and floor (a number; unknown is 0 when the machine is too
# busy), the entries of round 1 beside those of round 0 (format 2);
# --table shows each round; --merge of two one-round files makes a
# two-round file; a file with one round stays format 1.
"$PAMIRUN" -n 2 --timeout 120 "$TUNE" --quick --no-progress --batch-us 500 \
    --collectives alltoall --sizes 8:64 --rounds 2 -o "$dir/r.json" ||
    fail "--rounds 2"
"$PAMIRUN" -n 2 --timeout 120 "$TUNE" --quick --no-progress --batch-us 500 \
    --collectives alltoall --sizes 8:64 -o "$dir/r1.json" || fail "one round"
"$TUNE" --merge "$dir/r1.json" "$dir/r1.json" -o "$dir/m.json" \
    > /dev/null || fail "--merge"
python3 - "$dir/r.json" "$dir/r1.json" "$dir/m.json" <<'PY' || fail "rounds"
import json, sys
two, one, merged = (json.load(open(p)) for p in sys.argv[1:])
assert two["format_version"] == 2 and len(two["rounds"]) == 2, two["rounds"]
for r in two["rounds"]:
    assert r["started"].endswith("Z"), r
    assert r.get("floor_lat_us", 0) >= 0, r
keys = {}
for e in two["entries"]:
    k = (e["algorithm"], e["bytes"])
    keys.setdefault(k, set()).add(e.get("round", 0))
assert keys and all(v == {0, 1} for v in keys.values()), keys
assert one["format_version"] == 1 and len(one["rounds"]) == 1, one
assert all("round" not in e for e in one["entries"])
assert merged["format_version"] == 2 and len(merged["rounds"]) == 2
assert len(merged["entries"]) == 2 * len(one["entries"])
PY
"$TUNE" --table "$dir/r.json" > "$dir/rt.txt" || fail "--table of rounds"
grep -q '^round 1: started' "$dir/rt.txt" || fail "--table: no round 1"
grep -q 'round 1 (floor .* us): fastest alltoall_' "$dir/rt.txt" ||
    fail "--table: no fastest of round 1"
"$TUNE" --merge "$dir/r1.json" "$dir/missing.json" -o "$dir/x.json" \
    2> /dev/null && fail "--merge of a missing file"
[ ! -e "$dir/x.json" ] || fail "--merge wrote after a failure"

# Stopped half way: the file on disk is a valid profile at any time.
# --reps 40: the first point (every allreduce algorithm, a second look
# for those tied, each repetition a round) must end, and the file be
# saved, within the 110 s below also at a load average of 20-30 (60 s
# were not enough once at 27, s15).
"$PAMIRUN" -n 2 --timeout 120 "$TUNE" --no-progress --batch-us 500 --reps 40 \
    --collectives allreduce,alltoall --sizes 8:64K -o "$dir/s.json" &
pid=$!
# Stopped once it saved (every 5 s): a signal before pami-tune set its
# handler would end the ranks with nothing to resume.
i=0
while [ ! -s "$dir/s.json" ] && [ $i -lt 1100 ] && kill -0 $pid 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
kill -TERM $pid 2>/dev/null || true
wait $pid || true
[ -s "$dir/s.json" ] || fail "stop: no profile saved within 110 s"
before=$(grep -c '"collective"' "$dir/s.json" || true)
"$TUNE" --table "$dir/s.json" > /dev/null || fail "partial profile unreadable"
"$PAMIRUN" -n 2 --timeout 120 "$TUNE" --no-progress --batch-us 500 --reps 3 \
    --collectives allreduce,alltoall --sizes 8:64K --resume "$dir/s.json" ||
    fail "--resume"
after=$(grep -c '"collective"' "$dir/s.json")
[ "$after" -ge "$before" ] && [ "$after" -gt 0 ] || fail "resume: $before -> $after points"
"$TUNE" --table "$dir/s.json" > /dev/null || fail "resumed profile unreadable"

# The quick profile drives AUTO: no warning, correct results.
PAMI_COLL_PROFILE="$dir/p.json" PAMI_COLL_LOG=1 "$PAMIRUN" -n 3 --timeout 60 \
    "$4" run > "$dir/run.txt" 2>&1 || { cat "$dir/run.txt"; fail "AUTO from the profile"; }
grep -q 'select: geometry 0' "$dir/run.txt" || fail "no selection logged"

# pami-bench auto_vs_best on the quick profile: one JSON line per point
# with every field (the figures themselves are too noisy here to check),
# the ratios as computed from pass 2's repetitions (--aa prints them).
"$PAMIRUN" -n 3 --timeout 120 "$5" auto_vs_best --profile "$dir/p.json" \
    --json --reps 3 --iters 3 --max-bytes 512 --aa > "$dir/avb.json" ||
    fail "auto_vs_best"
python3 - "$dir/avb.json" "$dir/p.json" <<'PY' || fail "auto_vs_best output"
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
# the profile's medians at the bench's calls (doubles summed, bytes)
prof = {}
for e in json.load(open(sys.argv[2]))["entries"]:
    if "metrics" in e and e["type"] in ("double", "byte") and \
            e["op"] in ("sum", "none") and e["shape"]["size"] == 3:
        name = "bcast" if e["collective"] == "broadcast" else e["collective"]
        prof[(name, e["bytes"], e["algorithm"])] = e["metrics"]["median_us"]
colls = {l["collective"] for l in lines}
assert {"allreduce", "bcast", "alltoall", "barrier"} <= colls, colls
def near(a, b):
    return abs(a - b) <= 2e-3 * max(abs(b), 1e-9)
def paired(a, b):
    return statistics.median(x / y for x, y in zip(a, b))
for l in lines:
    assert l["test"] == "auto_vs_best" and l["ranks"] == 3, l
    for k in ("auto", "best", "builtin"):
        assert isinstance(l[k], str) and l[k], l
    assert l["auto_us"] > 0 and l["best_us"] > 0, l
    # pass 2 runs twice --reps; ratio is auto_us / best_us (medians),
    # paired_ratio pairs AUTO and the best repetition by repetition
    assert l["reps"] == 6 and l["pass1_reps"] == 3, l
    au, be, aa = l["auto_reps"], l["best_reps"], l["aa_reps"]
    assert len(au) == len(be) == len(aa) == 6, l
    assert near(l["auto_us"], statistics.median(au)), l
    assert near(l["best_us"], statistics.median(be)), l
    assert near(l["ratio"], l["auto_us"] / l["best_us"]), l
    assert near(l["paired_ratio"], paired(au, be)), l
    # the paired quotients' quartiles (statistics.quantiles, inclusive)
    q1, _, q3 = statistics.quantiles([x / y for x, y in zip(au, be)], n=4,
                                     method="inclusive")
    assert near(l["paired_q1"], q1) and near(l["paired_q3"], q3), l
    assert l["paired_q1"] <= l["paired_ratio"] <= l["paired_q3"], l
    assert near(l["aa_ratio"], statistics.median(aa) / l["best_us"]), l
    assert near(l["aa_paired_ratio"], paired(aa, be)), l
    if l["builtin_ratio"] is not None and "builtin_reps" in l:
        bi = l["builtin_reps"]
        assert near(l["builtin_ratio"], statistics.median(bi) / l["best_us"]), l
        assert near(l["paired_builtin_ratio"], paired(bi, be)), l
    elif l["builtin_ratio"] is not None:
        assert l["builtin_ratio"] == 1.0, l  # the built-in pick is the best
        assert l["paired_builtin_ratio"] == 1.0, l
    # pass 1 named the best among every candidate; pass 2 measured it
    # again beside AUTO
    assert l["pass1_auto_us"] > 0 and l["pass1_best_us"] > 0, l
    assert near(l["pass1_ratio"], l["pass1_auto_us"] / l["pass1_best_us"]), l
    assert l["pass1_paired_ratio"] > 0, l
    assert (l["pass1_builtin_ratio"] is None) == (l["builtin_ratio"] is None), l
    assert l["cpu"] <= 1 and l["pass1_cpu"] <= 1, l
    # the profile's own figures beside the bench's (null: no entry;
    # printed with 4 decimals)
    for k, a in (("profile_auto_us", l["auto"]), ("profile_best_us", l["best"])):
        want = prof.get((l["collective"], l["bytes"], a))
        assert (l[k] is None) if want is None else \
            abs(l[k] - want) <= 6e-5 or near(l[k], want), (k, want, l)
PY

if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    "$TUNE" --plot "$dir/p.json" -o "$dir/plots" || fail "--plot"
    [ -s "$dir/plots/allreduce_3x3_contiguous_int32_sum.png" ] || fail "no plot"
fi
echo "tune_tool: ok ($before points before the stop, $after after --resume)"
