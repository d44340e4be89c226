/* Global and static variables are symmetric: every PE runs the same
 * executable, so its writable data and bss have the same layout on every
 * PE, wherever the loader put them (PIE or not). The main program's
 * writable PT_LOAD segment is registered whole and an address in it
 * translates by its offset from the segment's start. */
#include <link.h>
#include <stdint.h>
#include <unistd.h>

#include "shmem_internal.h"

typedef struct {
    uintptr_t start, end;
} span_t;

static int find_main_data(struct dl_phdr_info *info, size_t size, void *arg)
{
    span_t *span = arg;

    (void)size;
    /* The first object dl_iterate_phdr reports is the main program. */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start, end;

        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        start = info->dlpi_addr + ph->p_vaddr;
        end = start + ph->p_memsz;
        if (span->end == 0 || start < span->start)
            span->start = start;
        if (end > span->end)
            span->end = end;
    }
    return 1; /* stop after the main program */
}

int shmemi_data_init(void)
{
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_DATA];
    span_t span = { 0, 0 };
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

    dl_iterate_phdr(find_main_data, &span);
    if (span.end == 0) {
        shmemi_debug("the program has no writable segment: no symmetric "
                     "global variables");
        return 0;
    }
    /* Whole pages: the region may start below the first variable. */
    span.start &= ~(page - 1);
    seg->base = (char *)span.start;
    seg->size = (size_t)(span.end - span.start);
    shmemi_debug("data and bss: %zu bytes at %p", seg->size,
                 (void *)seg->base);
    return shmemi_segment_exchange(seg);
}

void shmemi_data_fini(void)
{
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_DATA];

    shmemi_segment_release(seg);
    seg->base = NULL;
    seg->size = 0;
}
