#!/bin/sh
# The rsh agent of a simulated cluster (cluster.sh): mpirun runs
#   cluster_agent.sh HOST COMMAND...
# to start its daemon on HOST, as it would run ssh. The command, a shell
# line, runs on that node of the cluster named in PAMI_CLUSTER_NAME.
set -u
[ $# -ge 2 ] || { echo "cluster_agent.sh: usage: HOST COMMAND..." >&2; exit 1; }
[ -n "${PAMI_CLUSTER_NAME:-}" ] ||
    { echo "cluster_agent.sh: PAMI_CLUSTER_NAME is not set" >&2; exit 1; }
host=$1
shift
exec "$(dirname "$0")/cluster.sh" exec "$PAMI_CLUSTER_NAME" "$host" \
    sh -c "$*"
