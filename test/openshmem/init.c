/* Setup and query: init, PE numbers, version and name, accessibility,
 * init_thread, finalize twice, and the pre-1.2 names. */
#include <string.h>

#include <shmem.h>
#include <shmemx.h>

#include "shmem_check.h"

static long global_counter = 7; /* in the data segment */
static int global_zero;         /* in bss */

int main(int argc, char **argv)
{
    int provided = -1, major = 0, minor = 0;
    char name[SHMEM_MAX_NAME_LEN];
    int legacy = argc > 1 && strcmp(argv[1], "legacy") == 0;
    int me, n;

    CHECK(shmem_my_pe() == -1, "my_pe before init is %d", shmem_my_pe());
    if (legacy) {
        start_pes(0);
        me = _my_pe();
        n = _num_pes();
    } else {
        CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0,
              "init_thread failed");
        me = shmem_my_pe();
        n = shmem_n_pes();
        shmem_query_thread(&major);
        CHECK(major == provided, "query_thread %d, init_thread %d", major,
              provided);
        CHECK(provided >= SHMEM_THREAD_SINGLE &&
              provided <= SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    }
    CHECK(n >= 1 && me >= 0 && me < n, "PE %d of %d", me, n);
    CHECK(shmem_team_my_pe == shmem_team_my_pe, "link");

    shmem_info_get_version(&major, &minor);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION &&
          major == 1 && minor == 5, "version %d.%d", major, minor);
    shmem_info_get_name(name);
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "name '%s'", name);
    CHECK(strlen(SHMEM_VENDOR_STRING) < SHMEM_MAX_NAME_LEN, "name length");

    for (int pe = 0; pe < n; pe++)
        CHECK(shmem_pe_accessible(pe), "PE %d not accessible", pe);
    CHECK(!shmem_pe_accessible(n) && !shmem_pe_accessible(-1),
          "a PE out of range is accessible");
    CHECK(shmem_addr_accessible(&global_counter, (me + 1) % n),
          "a global variable is not accessible");
    CHECK(shmem_addr_accessible(&global_zero, (me + 1) % n),
          "a bss variable is not accessible");
    {
        int local = 0;
        long *heap = shmem_malloc(sizeof(long));

        CHECK(heap != NULL, "shmem_malloc(8) failed");
        CHECK(!shmem_addr_accessible(&local, 0),
              "a stack variable is accessible");
        CHECK(shmem_addr_accessible(heap, n - 1), "heap not accessible");
        CHECK(shmem_ptr(heap, me) == heap, "shmem_ptr to myself");
        CHECK(shmem_ptr(&global_counter, me) == &global_counter,
              "shmem_ptr to my global");
        CHECK(shmem_ptr(&local, me) == NULL, "shmem_ptr to the stack");
        /* pamirun starts every PE on this node: the heap of each is
         * mapped here, and so are the globals unless they were kept
         * private (SHMEM_GLOBALS_SHARED=0). */
        const char *gs = getenv("SHMEM_GLOBALS_SHARED");
        int globals_shared = gs == NULL || strcmp(gs, "0") != 0;

        for (int pe = 0; pe < n; pe++) {
            CHECK(shmem_ptr(heap, pe) != NULL, "no mapping of PE %d's heap",
                  pe);
            CHECK(pe == me ||
                  (shmem_ptr(&global_counter, pe) != NULL) == globals_shared,
                  "PE %d's globals %s", pe,
                  globals_shared ? "not mapped" : "mapped");
        }
        if (globals_shared) {
            long *peer = shmem_ptr(&global_counter, (me + 1) % n);

            CHECK(*peer == 7, "a peer's global read through the mapping: "
                  "%ld", *peer);
        }
        CHECK(shmem_ptr(heap, n) == NULL, "shmem_ptr to PE %d", n);
        *(long *)shmem_ptr(heap, me) = 1000 + me;
        shmem_barrier_all();
        CHECK(*(long *)shmem_ptr(heap, (me + 1) % n) == 1000 + (me + 1) % n,
              "load through the mapping of PE %d", (me + 1) % n);
        shmem_barrier_all();
        shmem_free(heap);
    }
    CHECK(shmemx_wtime() > 0, "wtime");
    shmem_barrier_all();
    shmem_finalize();
    shmem_finalize(); /* a second call does nothing */
    printf("PE %d of %d: ok\n", me, n);
    return global_counter == 7 && global_zero == 0 ? 0 : 1;
}
