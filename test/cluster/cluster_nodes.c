/*
 * cluster_nodes: the shared-memory and hierarchical collectives follow the
 * real node layout of a simulated cluster (run by cluster_test.sh, which
 * also checks the layout itself with --expect-nodes).
 *
 *   cluster_nodes
 *
 * - Each node has its own /dev/shm: every task makes a file there; after
 *   a barrier each sees the files of exactly its node's tasks.
 * - On the world (several nodes) the shared-memory algorithms cannot run
 *   (their check refuses, AUTO picks none of them, the coll_shm protocol
 *   counts no operation), allreduce_hier and barrier_hier can, and AUTO's
 *   barrier is barrier_hier.
 * - On a geometry of one node's tasks (all nodes at once, each on its
 *   own) they can: AUTO picks barrier_shm and allreduce_shm, the named
 *   broadcast_shm and allreduce_shm give the right results, coll_shm
 *   counts them.
 */
#include "coll_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static mp_job_t job;

/* The check of algorithm name for x on x's geometry: PAMI_SUCCESS,
 * PAMI_INVAL, or PAMI_NOT_FOUND when the geometry lists it nowhere. */
static pami_result_t check_of(const pami_xfer_t *x, const char *name)
{
    size_t na, nc;
    MP_CHECK(pami_geometry_algorithms_num(x->geometry, x->kind, &na, &nc));
    pami_algorithm_t          ids[64];
    pami_algorithm_metadata_t md[64];
    MP_EXPECT(na + nc <= 64, "%zu algorithms", na + nc);
    MP_CHECK(pami_geometry_algorithms_query(x->geometry, x->kind, ids, md,
                                            na, ids + na, md + na, nc));
    for (size_t a = 0; a < na + nc; a++)
        if (strcmp(md[a].name, name) == 0)
            return a < na ? PAMI_SUCCESS : md[a].check(x);
    return PAMI_NOT_FOUND;
}

static const char *auto_pick(const pami_xfer_t *x)
{
    pami_algorithm_selection_t sel;
    pami_xfer_t auto_x = *x;
    auto_x.field_mask &= ~(uint64_t)PAMI_XFER_FIELD_ALGORITHM;
    MP_CHECK(pami_geometry_algorithm_selected(&auto_x, &sel));
    return sel.name;
}

static uint64_t shm_ops(void)
{
    return ct_stat(job.ctx[0], "coll_shm", "ops");
}

/* Sum over the geometry's tasks t of (t + 1) * (i + 1), element i. */
static void allreduce_check(const ct_geom_t *cg, const char *name)
{
    enum { N = 64 };
    int64_t in[N], out[N];
    for (size_t i = 0; i < N; i++)
        in[i] = (int64_t)(job.me + 1) * (int64_t)(i + 1);
    pami_xfer_t x = ct_xfer(cg->g, PAMI_XFER_ALLREDUCE, name, in, out, N,
                            PAMI_TYPE_INT64, 0);
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    int64_t sum = 0;
    for (size_t r = 0; r < cg->n; r++)
        sum += (int64_t)cg->tasks[r] + 1;
    for (size_t i = 0; i < N; i++)
        MP_EXPECT(out[i] == sum * (int64_t)(i + 1), "%s on %s: element %zu "
                  "is %lld, expected %lld", name ? name : "AUTO", cg->name,
                  i, (long long)out[i], (long long)(sum * (int64_t)(i + 1)));
}

static void check_dev_shm(void)
{
    char prefix[128], path[256];
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_JOB_ID};
    MP_CHECK(pami_client_query(job.client, &a));
    snprintf(prefix, sizeof(prefix), "cluster-nodes-%s-", a.job_id);
    snprintf(path, sizeof(path), "/dev/shm/%s%u", prefix, job.me);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    MP_EXPECT(fd >= 0, "cannot make %s: %s", path, strerror(errno));
    close(fd);
    mp_sync(&job);
    bool *seen = calloc(job.size, sizeof(*seen));
    MP_EXPECT(seen != NULL, "out of memory");
    DIR *d = opendir("/dev/shm");
    MP_EXPECT(d != NULL, "cannot read /dev/shm: %s", strerror(errno));
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        unsigned long t = strtoul(e->d_name + strlen(prefix), NULL, 10);
        MP_EXPECT(t < job.size && job.attr.task_node[t] ==
                                      job.attr.task_node[job.me],
                  "/dev/shm shows %s of task %lu, on another node",
                  e->d_name, t);
        seen[t] = true;
    }
    closedir(d);
    for (size_t i = 0; i < job.attr.num_local_tasks; i++)
        MP_EXPECT(seen[job.attr.local_tasks[i]], "/dev/shm lacks the file "
                  "of task %u of this node", job.attr.local_tasks[i]);
    free(seen);
    mp_sync(&job);
    unlink(path);
}

int main(int argc, char **argv)
{
    mp_init(&job, "cluster_nodes", &argc, argv, NULL, 1, true);
    MP_EXPECT(job.attr.num_nodes >= 2, "%zu node(s): run on a cluster",
              job.attr.num_nodes);
    check_dev_shm();

    /* The world spans nodes. */
    ct_geom_t world = {.name = "world"};
    ct_world(&job, &world);
    uint64_t    ops0 = shm_ops();
    int64_t     buf[8] = {0};
    pami_xfer_t ar = ct_xfer(world.g, PAMI_XFER_ALLREDUCE, "allreduce_shm",
                             buf, buf + 4, 4, PAMI_TYPE_INT64, 0);
    pami_xfer_t bc = ct_xfer(world.g, PAMI_XFER_BROADCAST, "broadcast_shm",
                             buf, buf, 4, PAMI_TYPE_INT64, 0);
    pami_xfer_t br = ct_xfer(world.g, PAMI_XFER_BARRIER, "barrier_shm",
                             NULL, NULL, 0, PAMI_TYPE_BYTE, 0);
    MP_EXPECT(check_of(&ar, "allreduce_shm") != PAMI_SUCCESS &&
                  check_of(&bc, "broadcast_shm") != PAMI_SUCCESS &&
                  check_of(&br, "barrier_shm") != PAMI_SUCCESS,
              "a shared-memory algorithm accepts the world of %zu nodes",
              job.attr.num_nodes);
    MP_EXPECT(check_of(&ar, "allreduce_hier") == PAMI_SUCCESS &&
                  check_of(&br, "barrier_hier") == PAMI_SUCCESS,
              "the hierarchical algorithms refuse the world");
    const char *pick = auto_pick(&br);
    MP_EXPECT(strcmp(pick, "barrier_hier") == 0, "AUTO's world barrier is "
              "%s", pick);
    pick = auto_pick(&ar);
    MP_EXPECT(strstr(pick, "_shm") == NULL, "AUTO's world allreduce is %s",
              pick);
    allreduce_check(&world, NULL);
    allreduce_check(&world, "allreduce_hier");
    MP_CHECK(pami_geometry_barrier(job.ctx[0], world.g));
    MP_EXPECT(shm_ops() == ops0, "coll_shm ran %llu operations on the world",
              (unsigned long long)(shm_ops() - ops0));

    /* Each node's tasks, every node at once: the same names and ids. */
    ct_geom_t node = {0};
    MP_EXPECT(ct_create(&job, &node, "node", 7, job.attr.local_tasks,
                        job.attr.num_local_tasks, NULL), "not a member");
    ar.geometry = bc.geometry = br.geometry = node.g;
    if (node.n >= 2) {
        MP_EXPECT(check_of(&ar, "allreduce_shm") == PAMI_SUCCESS &&
                      check_of(&bc, "broadcast_shm") == PAMI_SUCCESS &&
                      check_of(&br, "barrier_shm") == PAMI_SUCCESS,
                  "a shared-memory algorithm refuses the node's %zu tasks",
                  node.n);
        pick = auto_pick(&br);
        MP_EXPECT(strcmp(pick, "barrier_shm") == 0, "AUTO's node barrier "
                  "is %s", pick);
        pick = auto_pick(&ar);
        MP_EXPECT(strcmp(pick, "allreduce_shm") == 0, "AUTO's node "
                  "allreduce is %s", pick);
        ops0 = shm_ops();
        allreduce_check(&node, NULL);
        allreduce_check(&node, "allreduce_shm");
        int64_t data[16];
        size_t  root = node.n - 1;
        for (size_t i = 0; i < 16; i++)
            data[i] = node.rank == root ? (int64_t)(job.me * 100 + i) : -1;
        bc.sbuf = bc.rbuf = data;
        bc.count = 16;
        bc.root  = root;
        MP_CHECK(pami_collective_wait(job.ctx[0], &bc));
        for (size_t i = 0; i < 16; i++)
            MP_EXPECT(data[i] == (int64_t)(node.tasks[root] * 100 + i),
                      "broadcast_shm: element %zu is %lld", i,
                      (long long)data[i]);
        MP_CHECK(pami_geometry_barrier(job.ctx[0], node.g));
        MP_EXPECT(shm_ops() >= ops0 + 3, "coll_shm ran %llu of the node's "
                  "4 operations", (unsigned long long)(shm_ops() - ops0));
    }
    MP_CHECK(pami_geometry_barrier(job.ctx[0], world.g));
    while (pami_geometry_destroy(&node.g) == PAMI_EAGAIN)
        mp_wait_step(&job, job.ctx[0]);
    if (job.me == 0)
        printf("cluster_nodes: %zu nodes; shared-memory algorithms on each "
               "node's geometry only, hierarchical ones on the world\n",
               job.attr.num_nodes);
    mp_finish(&job);
    return 0;
}
