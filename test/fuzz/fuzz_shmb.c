/*
 * libFuzzer target: the shared-memory barrier's records as a follower
 * finds them in /dev/shm (protocols/shm_barrier/shm_objects.c): the
 * leader's region (shmb_region_open) and the barrier register it names
 * (shmb_reg_open). Another process of the same user can write anything
 * there; nothing may be used before it is checked.
 *
 * Input: u8 local tasks, u8 index of this task, u64 job hash, u8 context
 * offset, u16 region file size, the region's bytes (then zeros to the
 * file size), u16 register file size, the register's bytes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "shm_internal.h"

FZ_QUIET_INIT

/* Writes a shared object of file_size bytes, the first from f. */
static int put_object(const char *name, fz_t *f, size_t file_size)
{
    int fd = shm_open(name, O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (fd < 0)
        return -1;
    size_t   len;
    uint8_t *b = fz_bytes(f, file_size, &len);
    int rc = ftruncate(fd, (off_t)file_size) == 0 &&
                     (len == 0 || pwrite(fd, b, len, 0) == (ssize_t)len)
                 ? 0 : -1;
    free(b);
    close(fd);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t f = {in, size};
    shmb_state_t *st = calloc(1, sizeof(*st));
    pami_task_t   local[256];
    if (st == NULL)
        abort();
    st->nlocal   = fz_u8(&f) % 64 + 1u;
    st->my_index = fz_u8(&f) % st->nlocal;
    st->job_hash = fz_take(&f, 8);
    st->offset   = fz_u8(&f) % 4;
    for (size_t i = 0; i < st->nlocal; i++)
        local[i] = (pami_task_t)(3 * i + 1);
    st->local = local;
    st->me    = local[st->my_index];
    snprintf(st->region_name, sizeof(st->region_name),
             "/pami-fuzz-%ld-shmbar", (long)getpid());

    size_t region_size = fz_u16(&f);
    if (put_object(st->region_name, &f, region_size) == 0 &&
        shmb_region_open(st) == PAMI_SUCCESS) {
        /* Only what the check let through is read. */
        uint64_t reg_id = st->region->reg_id;
        size_t   reg_size = fz_u16(&f);
        shmb_reg_name(st, reg_id);
        char reg_name[sizeof(st->reg_name)];
        memcpy(reg_name, st->reg_name, sizeof(reg_name));
        if (put_object(reg_name, &f, reg_size) == 0 &&
            shmb_reg_open(st, reg_id) == PAMI_SUCCESS) {
            for (size_t i = 0; i < st->nlocal; i++)
                (void)atomic_load(shmb_slot(st->reg, i));
        }
        shm_unlink(reg_name);
    }
    shm_unlink(st->region_name);
    shmb_objects_unmap(st);
    free(st);
    return 0;
}
