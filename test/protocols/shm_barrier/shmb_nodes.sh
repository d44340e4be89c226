#!/bin/sh
# Runs a rank as if on its own node: a UTS namespace with the host name
# shmb-node-<rank / PER>, so pami sees nodes of PER tasks each (pami tells
# nodes apart by host name and boot id). Needs unshare(CLONE_NEWUTS);
# exits 77 (skipped) where it is not allowed.
#
#   shmb_nodes.sh PER PROGRAM ARGS...
per=$1
shift
node=$((PAMI_RANK / per))
if ! unshare -u true 2>/dev/null; then
    echo "shmb_nodes.sh: no UTS namespaces here; skipped" >&2
    exit 77
fi
export SHMB_NODES_PER=$per
exec unshare -u sh -c 'hostname "shmb-node-$0" && exec "$@"' "$node" "$@"
