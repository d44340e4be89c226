/* Global and static variables are symmetric: every PE runs the same
 * executable, so the main program's writable data and bss have the same
 * layout on every PE, wherever the loader put them (PIE or not); an
 * address translates by its offset from the segment's start.
 *
 * So that the PEs of a node can load and store each other's globals as
 * they do heaps, the segment is moved into memory pami shares: a region
 * from pami_memregion_alloc gets a copy of the segment, and a second
 * mapping of the region's pages (mremap with old size 0) replaces the
 * segment at its own address. The program then uses shared pages at the
 * addresses it was linked for; pami reaches them through the region (its
 * base is the first mapping), and the node's peers map them with
 * pami_memregion_map. The part the loader makes read-only after
 * relocation (RELRO) is left alone. Where that cannot be done (or with
 * SHMEM_GLOBALS_SHARED=0) the segment stays private and is registered
 * with pami_memregion_create: peers then reach it through pami only. */
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shmem_internal.h"

typedef struct {
    uintptr_t start, end;      /* the writable PT_LOAD */
    uintptr_t relro_end;       /* 0: none */
} span_t;

static int find_main_data(struct dl_phdr_info *info, size_t size, void *arg)
{
    span_t *span = arg;

    (void)size;
    /* The first object dl_iterate_phdr reports is the main program. The
     * last writable PT_LOAD holds .data and .bss. */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            span->start = start;
            span->end = start + ph->p_memsz;
        } else if (ph->p_type == PT_GNU_RELRO) {
            span->relro_end = start + ph->p_memsz;
        }
    }
    return 1; /* stop after the main program */
}

static int globals_shared_wanted(void)
{
    const char *v = getenv("SHMEM_GLOBALS_SHARED");

    return v == NULL || strcmp(v, "0") != 0;
}

/* These two read the whole pages of the segment, padding between
 * variables included, which AddressSanitizer poisons around globals:
 * not instrumented, and word by word through volatile pointers so that
 * the compiler makes no memcpy call of them (the sanitizer's memcpy
 * checks its ranges). */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
#define NO_ASAN __attribute__((no_sanitize("address")))
#else
#define NO_ASAN
#endif

NO_ASAN static int page_is_zero(const char *p, size_t page)
{
    const volatile uint64_t *w = (const volatile uint64_t *)p;

    for (size_t i = 0; i < page / sizeof(*w); i++)
        if (w[i] != 0)
            return 0;
    return 1;
}

NO_ASAN static void copy_page(char *to, const char *from, size_t page)
{
    volatile uint64_t *t = (volatile uint64_t *)to;
    const volatile uint64_t *f = (const volatile uint64_t *)from;

    for (size_t i = 0; i < page / sizeof(*t); i++)
        t[i] = f[i];
}

/* Moves [base, base + size) into a pami region; 0 on success, the
 * segment untouched on failure. */
static int share_segment(shmemi_segment_t *seg, size_t page)
{
    void *copy, *alias;
    pami_result_t rc;

    rc = pami_memregion_alloc(shmemi.context, seg->size, &copy, &seg->mr);
    if (rc != PAMI_SUCCESS) {
        shmemi_debug("globals stay private: pami_memregion_alloc(%zu): %s",
                     seg->size, pami_error_text(rc));
        return -1;
    }
    /* The region comes zeroed: copy only pages with data, so a large bss
     * takes no shared memory until it is written. */
    for (size_t off = 0; off < seg->size; off += page)
        if (!page_is_zero(seg->base + off, page))
            copy_page((char *)copy + off, seg->base + off, page);
    /* The system call itself: UCX's memory hooks replace mremap and
     * refuse this form. */
    alias = (void *)syscall(SYS_mremap, copy, (size_t)0, seg->size,
                            MREMAP_MAYMOVE | MREMAP_FIXED, seg->base);
    if (alias != (void *)seg->base) {
        shmemi_debug("globals stay private: mremap onto %p: %s",
                     (void *)seg->base, strerror(errno));
        pami_memregion_destroy(shmemi.context, &seg->mr);
        return -1;
    }
    seg->registered = 1;
    return 0;
}

int shmemi_data_init(void)
{
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_DATA];
    span_t span = { 0, 0, 0 };
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start, end;

    dl_iterate_phdr(find_main_data, &span);
    if (span.end == 0) {
        shmemi_debug("the program has no writable segment: no symmetric "
                     "global variables");
        return 0;
    }
    /* Whole pages, above the RELRO part (read-only once relocated, and
     * holding no variable of the program's). */
    start = span.start & ~(page - 1);
    if (span.relro_end > start && span.relro_end < span.end)
        start = (span.relro_end + page - 1) & ~(page - 1);
    end = (span.end + page - 1) & ~(page - 1);
    if (end <= start)
        return 0;
    seg->base = (char *)start;
    seg->size = (size_t)(end - start);
    if (globals_shared_wanted() && share_segment(seg, page) == 0)
        shmemi_debug("data and bss: %zu bytes at %p, shared", seg->size,
                     (void *)seg->base);
    else
        shmemi_debug("data and bss: %zu bytes at %p, private", seg->size,
                     (void *)seg->base);
    return shmemi_segment_exchange(seg);
}

void shmemi_data_fini(void)
{
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_DATA];

    /* Destroying a shared region unmaps its first mapping only: the
     * program's globals, the second mapping, stay as they are. */
    shmemi_segment_release(seg);
    seg->base = NULL;
    seg->size = 0;
}
