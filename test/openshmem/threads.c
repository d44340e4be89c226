/* SHMEM_THREAD_MULTIPLE: several threads of each PE at once put, get,
 * quiet, do atomics and wait, on the heap and on global variables (with
 * SHMEM_GLOBALS_SHARED=0 those go through pami, which the threads then
 * share). Each thread puts its own slot on the right neighbour, quiets,
 * and reads it back with a get; counts every atomic add and checks the
 * totals; takes tickets with fetch-and-increment (each thread's tickets
 * must rise); and all wait until every thread of every PE is done. */
#include <pthread.h>
#include <string.h>

#include <shmem.h>

#include "shmem_check.h"

#define THREADS 4
#define ROUNDS  150
#define SLOT    16

static long g_slots[THREADS][SLOT]; /* globals: written by the left PE */
static long g_count;
static long *h_slots;               /* heap: THREADS * SLOT */
static long *h_count, *h_ticket, *h_done;
static int me, npes, right;

static long value(int pe, int t, int r, int i)
{
    return ((long)pe << 40) | ((long)t << 32) | ((long)r << 8) | i;
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    long src[SLOT], back[SLOT], last_ticket = -1;

    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < SLOT; i++)
            src[i] = value(me, t, r, i);
        long *dest = (r & 1) ? g_slots[t] : &h_slots[t * SLOT];
        shmem_long_put(dest, src, SLOT, right);
        shmem_quiet();
        shmem_long_get(back, dest, SLOT, right);
        CHECK(memcmp(back, src, sizeof(src)) == 0,
              "thread %d round %d: get after quiet differs", t, r);
        for (int pe = 0; pe < npes; pe++) {
            shmem_long_atomic_add(h_count, 1, pe);
            shmem_long_atomic_inc(&g_count, pe);
        }
        long ticket = shmem_long_atomic_fetch_inc(h_ticket, 0);
        CHECK(ticket > last_ticket, "thread %d: ticket %ld after %ld", t,
              ticket, last_ticket);
        last_ticket = ticket;
    }
    shmem_quiet();
    for (int pe = 0; pe < npes; pe++)
        shmem_long_atomic_inc(h_done, pe);
    shmem_long_wait_until(h_done, SHMEM_CMP_EQ, (long)npes * THREADS);
    return NULL;
}

int main(void)
{
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init");
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    shmem_query_thread(&provided);
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "query_thread %d", provided);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    h_slots = shmem_calloc(THREADS * SLOT, sizeof(long));
    h_count = shmem_calloc(4, sizeof(long));
    CHECK(h_slots != NULL && h_count != NULL, "calloc");
    h_ticket = h_count + 1;
    h_done = h_count + 2;
    shmem_barrier_all();

    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0,
              "pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    shmem_barrier_all();

    long adds = (long)npes * THREADS * ROUNDS;
    CHECK(*h_count == adds, "heap count %ld, not %ld", *h_count, adds);
    CHECK(g_count == adds, "global count %ld, not %ld", g_count, adds);
    if (me == 0)
        CHECK(*h_ticket == adds, "tickets %ld, not %ld", *h_ticket, adds);
    int left = (me + npes - 1) % npes;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < SLOT; i++) {
            long want_h = value(left, t, ROUNDS - 2, i);
            long want_g = value(left, t, ROUNDS - 1, i);
            CHECK(h_slots[t * SLOT + i] == want_h, "heap slot %d[%d]", t, i);
            CHECK(g_slots[t][i] == want_g, "global slot %d[%d]", t, i);
        }
    shmem_barrier_all();
    shmem_free(h_count);
    shmem_free(h_slots);
    shmem_finalize();
    return 0;
}
