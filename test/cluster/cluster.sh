#!/bin/sh
# A simulated cluster on this machine: network namespaces joined by a
# bridge, each "node" with its own host name, /dev/shm and SysV IPC, ranks
# started by Open MPI's mpirun through an rsh agent (cluster_agent.sh).
# See docs/cluster.md.
#
#   cluster.sh check                 can a cluster be made here? (exit 77: no)
#   cluster.sh up NAME NODES [PID]   make cluster NAME of NODES nodes, owned
#                                    by process PID (default: the caller)
#   cluster.sh down NAME             remove it, killing what runs in it
#   cluster.sh clean                 remove clusters whose owner is gone
#   cluster.sh mpirun NAME ARGS...   mpirun ARGS on the head of NAME
#   cluster.sh exec NAME NODE CMD... CMD on NODE (what the agent runs)
#   cluster.sh kill NAME NODE        SIGKILL every process on NODE
#   cluster.sh cut NAME NODE         take NODE's link (its eth0) down
#   cluster.sh mend NAME NODE        bring it back up
#   cluster.sh pids NAME NODE        the processes on NODE
#
# NAME: letters and digits, at most 12. Node k is "nodeK" at SUBNET.(10+k),
# the head (where mpirun runs, no ranks) "head" at SUBNET.1, the bridge in
# a namespace of its own: nothing changes in this machine's own network
# namespace, and each cluster's addresses exist only inside its
# namespaces, so clusters never see each other.
#
# Environment: PAMI_CLUSTER_STATE (default /tmp/pami-cluster) holds one
# folder per cluster (hosts, hostfile, owner); PAMI_CLUSTER_SUBNET
# (default 10.213.0, always a /24).
set -u

state=${PAMI_CLUSTER_STATE:-/tmp/pami-cluster}
subnet=${PAMI_CLUSTER_SUBNET:-10.213.0}
prefix=pamicl-
self=$(cd "$(dirname "$0")" && pwd)

die() {
    echo "cluster.sh: $*" >&2
    exit 1
}

skip() {
    echo "cluster.sh: $*; skipped" >&2
    exit 77
}

ns() {
    echo "$prefix$1-$2"
}

valid_name() {
    case $1 in
    '' | *[!A-Za-z0-9]*) die "bad cluster name '$1'" ;;
    esac
    [ ${#1} -le 12 ] || die "cluster name '$1' longer than 12"
}

# The start time of process $1 in clock ticks since boot, empty if gone:
# with the pid it names a process for good (pids are reused).
start_time() {
    [ -r "/proc/$1/stat" ] || return 0
    sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20
}

owner_alive() {
    [ -f "$state/$1/owner" ] || return 1
    read -r pid start <"$state/$1/owner" || return 1
    [ -n "$pid" ] && [ -n "$start" ] && [ "$(start_time "$pid")" = "$start" ]
}

cmd_check() {
    [ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, mounts)"
    for c in ip unshare mpirun flock; do
        command -v "$c" >/dev/null 2>&1 || skip "no '$c' here"
    done
    probe=$(ns "check$$" sw)
    ip netns add "$probe" 2>/dev/null || skip "cannot make network namespaces"
    ok=1
    ip -n "$probe" link add br0 type bridge 2>/dev/null || ok=0
    ip netns del "$probe" 2>/dev/null
    [ $ok -eq 1 ] || skip "cannot make bridges in a network namespace"
    unshare --uts --ipc --mount true 2>/dev/null ||
        skip "cannot make UTS, IPC and mount namespaces"
}

# Every process in a namespace, killed until none is left (a dying
# mpirun may still fork).
kill_ns() {
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(ip netns pids "$1" 2>/dev/null)
        [ -n "$pids" ] || return 0
        kill -9 $pids 2>/dev/null
        sleep 0.1
    done
    echo "cluster.sh: processes left in $1: $(ip netns pids "$1")" >&2
}

cmd_down() {
    valid_name "$1"
    for n in $(ip netns list 2>/dev/null | cut -d' ' -f1 |
               grep "^$prefix$1-"); do
        kill_ns "$n"
    done
    # The switch last: deleting it takes the bridge and every veth with it.
    for n in $(ip netns list 2>/dev/null | cut -d' ' -f1 |
               grep "^$prefix$1-" | sort -r); do
        ip netns del "$n" 2>/dev/null
    done
    rm -rf "${state:?}/$1"
}

# Clusters whose owner process is gone (a killed run), and namespaces of
# ours with no folder at all. One cleaner at a time.
cmd_clean() {
    mkdir -p "$state" || die "cannot make $state"
    (
        flock 8 || exit 1
        names=$(
            ip netns list 2>/dev/null | cut -d' ' -f1 | grep "^$prefix" |
                sed "s/^$prefix\([A-Za-z0-9]*\)-.*/\1/"
            ls "$state" 2>/dev/null
        )
        for c in $(echo "$names" | sort -u); do
            [ -n "$c" ] || continue
            # A folder without an owner may be one being made right now.
            if [ -d "$state/$c" ] && [ ! -f "$state/$c/owner" ] &&
                [ -n "$(find "$state/$c" -maxdepth 0 -mmin -1)" ]; then
                continue
            fi
            if ! owner_alive "$c"; then
                echo "cluster.sh: removing stale cluster $c" >&2
                cmd_down "$c"
            fi
        done
    ) 8>"$state/.clean.lock"
}

cmd_up() {
    name=$1 nodes=$2 owner=${3:-$PPID}
    valid_name "$name"
    case $nodes in
    '' | *[!0-9]*) die "bad node count '$nodes'" ;;
    esac
    [ "$nodes" -ge 1 ] && [ "$nodes" -le 200 ] || die "1 to 200 nodes"
    cmd_clean
    dir=$state/$name
    since=$(start_time "$owner")
    [ -n "$since" ] || die "owner process $owner is not running"
    mkdir "$dir" 2>/dev/null || die "cluster $name exists"
    echo "$owner $since" >"$dir/owner.new" &&
        mv "$dir/owner.new" "$dir/owner"
    trap 'cmd_down "$name"' EXIT
    trap 'exit 1' INT TERM HUP
    sw=$(ns "$name" sw)
    ip netns add "$sw" || die "cannot make namespace $sw"
    ip -n "$sw" link set lo up &&
        ip -n "$sw" link add br0 type bridge &&
        ip -n "$sw" link set br0 up || die "cannot make the bridge"
    : >"$dir/hostfile"
    echo "127.0.0.1 localhost" >"$dir/hosts"
    k=-1
    while [ $k -lt "$nodes" ]; do
        if [ $k -lt 0 ]; then host=head addr=$subnet.1 port=head
        else host=node$k addr=$subnet.$((10 + k)) port=n$k
        fi
        n=$(ns "$name" "$host")
        ip netns add "$n" || die "cannot make namespace $n"
        # Made in the switch's namespace, one end moved to the node's:
        # the machine's own namespace never sees either.
        ip -n "$sw" link add "$port" type veth peer name eth0 netns "$n" &&
            ip -n "$sw" link set "$port" master br0 up &&
            ip -n "$n" link set lo up &&
            ip -n "$n" addr add "$addr/24" dev eth0 &&
            ip -n "$n" link set eth0 up || die "cannot wire $host"
        echo "$addr $host" >>"$dir/hosts"
        [ $k -lt 0 ] || echo "$host" >>"$dir/hostfile"
        k=$((k + 1))
    done
    echo "$nodes" >"$dir/nodes"
    trap - EXIT INT TERM HUP
    echo "$dir"
}

need() {
    valid_name "$1"
    [ -f "$state/$1/nodes" ] || die "no cluster $1"
}

need_node() {
    need "$1"
    case $2 in
    head) ;;
    node[0-9]*) [ "${2#node}" -lt "$(cat "$state/$1/nodes")" ] ||
                    die "no node $2 in $1" ;;
    *) die "no node $2 in $1" ;;
    esac
}

# CMD on NODE: its network namespace, then its own host name, IPC, mounts
# (a fresh /dev/shm, the cluster's hosts file as /etc/hosts), and UCX
# over TCP only (UCX would otherwise reach other nodes' processes through
# shared memory and CMA: one kernel underneath).
cmd_exec() {
    name=$1 node=$2
    shift 2
    need_node "$name" "$node"
    export UCX_TLS=tcp,self
    exec ip netns exec "$(ns "$name" "$node")" \
        unshare --uts --ipc --mount --propagation private -- sh -c '
            hostname "$1" &&
                mount -t tmpfs -o mode=1777 shm /dev/shm &&
                mount --bind "$2" /etc/hosts || exit 1
            shift 2
            exec "$@"' sh "$node" "$state/$name/hosts" "$@"
}

cmd_mpirun() {
    name=$1
    shift
    need "$name"
    dir=$state/$name
    # The agent finds the cluster by this variable; mpirun passes its
    # environment to the agent it runs.
    export PAMI_CLUSTER_NAME="$name" PAMI_CLUSTER_STATE="$state"
    cmd_exec "$name" head \
        mpirun --allow-run-as-root --oversubscribe \
        --hostfile "$dir/hostfile" \
        --mca plm_rsh_agent "$self/cluster_agent.sh" \
        --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include "$subnet.0/24" \
        --mca btl_tcp_if_include "$subnet.0/24" \
        -x UCX_TLS=tcp,self "$@"
}

cmd_pids() {
    need_node "$1" "$2"
    ip netns pids "$(ns "$1" "$2")"
}

# The node's end of its veth: down, the node has no route to anywhere and
# the bridge loses its port (no carrier); the processes run on.
cmd_link() {
    need_node "$2" "$3"
    [ "$3" != head ] || die "the head's link is not for cutting"
    ip -n "$(ns "$2" "$3")" link set eth0 "$1"
}

[ $# -ge 1 ] || die "usage: see the head of $0"
cmd=$1
shift
case $cmd in
check) cmd_check ;;
up) [ $# -ge 2 ] || die "usage: up NAME NODES [OWNER_PID]"; cmd_up "$@" ;;
down) [ $# -eq 1 ] || die "usage: down NAME"; cmd_down "$1" ;;
clean) cmd_clean ;;
mpirun) [ $# -ge 1 ] || die "usage: mpirun NAME ARGS..."; cmd_mpirun "$@" ;;
exec) [ $# -ge 3 ] || die "usage: exec NAME NODE CMD..."; cmd_exec "$@" ;;
kill) [ $# -eq 2 ] || die "usage: kill NAME NODE"
      need_node "$1" "$2"; kill_ns "$(ns "$1" "$2")" ;;
cut) [ $# -eq 2 ] || die "usage: cut NAME NODE"; cmd_link down "$@" ;;
mend) [ $# -eq 2 ] || die "usage: mend NAME NODE"; cmd_link up "$@" ;;
pids) [ $# -eq 2 ] || die "usage: pids NAME NODE"; cmd_pids "$@" ;;
*) die "unknown command '$cmd'" ;;
esac
