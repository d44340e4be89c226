#!/bin/bash
# The quiet measurement of every open target that docs/PERFORMANCE.md
# reports under "Latest quiet measurement": run it on an idle machine,
# from the top of a built clone.
#   tools/quiet-measure.sh BUILD_DIR OUT_DIR
# Issue 17 on one node (two runs with the shared-memory fast path, one
# without, large sends alone), across two simulated nodes (root: network
# namespaces, test/cluster/cluster.sh; two runs, and one with UCX's TCP
# pieces at 68 KiB on the UCP side too), issue 11 (auto_vs_best against
# the built-in profiles, pami-bench-mpi against Open MPI), issue 14 when
# OSU_SRC (the OSU micro-benchmarks' sources) and OSU_REF (their build
# against the reference OpenSHMEM, tools/osu/osu-shmem.sh) are set, and
# burst_oversub. Each step's JSON goes to OUT_DIR; `uptime` stamps the
# steps in OUT_DIR/uptime.
set -u
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
top=$(pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd) || exit 2
cd "$1" || exit 2
bench=tools/pami-bench/pami-bench
run2() { tools/pamirun/pamirun -n 2 "$bench" "$@"; }
uptime > "$out/uptime"
for r in 1 2; do
  run2 am_lat am_rate put_lat rmw_lat put_lat_shm rmw_lat_shm put_bw get_bw send_bw \
    --vs-ucx --reps 5 --json > "$out/p2p-on-$r.json" 2>"$out/p2p-on-$r.err"
done
PAMI_SHM_FASTPATH=0 run2 am_lat am_rate put_lat rmw_lat send_bw --vs-ucx --reps 5 \
  --json > "$out/p2p-off.json" 2>"$out/p2p-off.err"
run2 send_bw --vs-ucx --min-bytes 1M --max-bytes 64M --json > "$out/bw-1.json" 2>"$out/bw-1.err"
uptime >> "$out/uptime"
xnode() {
  "$top/test/cluster/cluster.sh" mpirun qm -np 2 --map-by ppr:1:node --bind-to none "$@" \
    "$bench" am_lat am_rate send_bw put_lat rmw_lat put_bw get_bw --vs-ucx --json \
    --reps 3 --max-bytes 16M
}
if "$top/test/cluster/cluster.sh" up qm 2 > "$out/cluster-up.log" 2>&1; then
  for r in 1 2; do xnode > "$out/xnode-$r.json" 2>"$out/xnode-$r.err"; done
  xnode -x UCX_TCP_TX_SEG_SIZE=68K -x UCX_TCP_RX_SEG_SIZE=68K \
    > "$out/xnode-seg.json" 2>"$out/xnode-seg.err"
  "$top/test/cluster/cluster.sh" down qm >> "$out/cluster-up.log" 2>&1
else
  echo "quiet-measure: no simulated nodes (see $out/cluster-up.log)" >&2
fi
uptime >> "$out/uptime"
for n in 2 4 8; do
  reps=5; [ $n -gt 2 ] && reps=10
  tools/pamirun/pamirun -n $n "$bench" auto_vs_best --profile "$top/docs/profiles/builtin-${n}x1.json" \
    --json --reps $reps > "$out/avb$n.json" 2>"$out/avb$n.err"
done
for n in 2 4 8; do
  mpirun --allow-run-as-root --oversubscribe -np $n tools/pami-bench/pami-bench-mpi \
    allreduce bcast allgather alltoall reduce_scatter barrier --vs-mpi --json \
    > "$out/coll-mpi$n.json" 2>"$out/coll-mpi$n.err"
done
uptime >> "$out/uptime"
if [ -n "${OSU_SRC:-}" ] && [ -n "${OSU_REF:-}" ]; then
  osu="$top/tools/osu/osu-shmem.sh"
  "$osu" build openshmem/oshcc "$OSU_SRC" "$out/osu-pami-bin" > "$out/osu-build.log" 2>&1
  for rep in 1 2 3; do for b in barrier broadcast reduce collect fcollect put:heap \
      put:global get:heap get:global put_mr:heap put_nb:heap get_nb:heap \
      put_mr_nb:heap get_mr_nb:heap atomics:heap; do
    OSU_RESULTS=$out/osu/pami/$rep OSU_BENCHES=$b "$osu" run "$out/osu-pami-bin" \
      openshmem/oshrun -n 2 >> "$out/osu-run.log" 2>&1
    OSU_RESULTS=$out/osu/ref/$rep OSU_BENCHES=$b "$osu" run "$OSU_REF" \
      mpiexec --allow-run-as-root --oversubscribe -n 2 >> "$out/osu-run.log" 2>&1
  done; done
  "$top/tools/osu/osu-table.py" "$out/osu/pami" "$out/osu/ref" \
    --sizes 0,4,8,1024,65536,1048576 > "$out/osu-table.md"
  uptime >> "$out/uptime"
fi
for r in 1 2; do for n in 4 8; do
  tools/pamirun/pamirun -n $n "$bench" burst_oversub --reps 3 --json > "$out/burst-$n-$r.json" 2>&1
done; done
uptime >> "$out/uptime"
