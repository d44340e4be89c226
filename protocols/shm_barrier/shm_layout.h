/*
 * The two shared objects of the shared-memory barrier, as they lie in
 * memory (docs/protocols/shm-barrier.md). Both are shared only by the
 * tasks of one node, so fields are in host byte order. Words that tasks
 * change concurrently sit on cache lines of their own.
 */
#ifndef SHM_LAYOUT_H
#define SHM_LAYOUT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SHMB_VERSION      1
#define SHMB_REGION_MAGIC 0x524d4853494d4150ull /* "PAMISHMR" in memory */
#define SHMB_REG_MAGIC    0x424d4853494d4150ull /* "PAMISHMB" in memory */
#define SHMB_CACHE_LINE   64

/* Region states. */
#define SHMB_REGION_CREATED   1 /* header written, no register yet */
#define SHMB_REGION_PUBLISHED 2 /* reg_id valid: followers may attach */
#define SHMB_REGION_CLOSED    3 /* the leader left: do not attach */
#define SHMB_REGION_READY     4 /* every local task attached: set-up done */
#define SHMB_REGION_FAILED    5 /* the leader gave up: set-up failed */
#define SHMB_REGION_DEAD      6 /* failed because a local task died */

/* The region: created by the leader, watched by the followers. */
typedef struct {
    uint64_t         magic;      /* 0: SHMB_REGION_MAGIC, written last */
    uint32_t         version;    /* 8 */
    uint32_t         bytes;      /* 12: size of the whole object */
    uint64_t         job_hash;   /* 16: FNV-1a of the job id */
    uint32_t         ntasks;     /* 24: local tasks */
    uint32_t         leader;     /* 28: leader's task id */
    uint32_t         offset;     /* 32: context offset */
    uint32_t         leader_pid; /* 36 */
    uint64_t         reg_id;     /* 40: names the register; 0 until published */
    uint8_t          pad0[SHMB_CACHE_LINE - 48];
    _Atomic uint32_t state;      /* 64: SHMB_REGION_*, futex word */
    uint8_t          pad1[SHMB_CACHE_LINE - 4];
    _Atomic uint32_t attached;   /* 128: tasks attached, futex word */
    uint8_t          pad2[SHMB_CACHE_LINE - 4];
    _Atomic uint32_t pid[];      /* 192: per local index, 0 until attached */
} shmb_region_t;

#define SHMB_REGION_BYTES(n) (offsetof(shmb_region_t, pid) + 4 * (size_t)(n))

/* The barrier register: its own object, named after reg_id. Task i of
 * the node (its index in local_tasks) publishes in its slot the number
 * of the barrier it reached; barrier k is complete when every slot holds
 * k or more. Numbers, not one sense bit, so that a task already in
 * barrier k + 1 still counts as arrived for k. Slots are packed 8 to a
 * cache line: tasks of one line see each other's arrival in one transfer
 * (measured twice as fast as a line per task with 2 tasks), and no line
 * has more than 8 writers. */
#define SHMB_SLOTS_PER_LINE 8

typedef struct {
    uint64_t         magic;      /* 0: SHMB_REG_MAGIC */
    uint32_t         version;    /* 8 */
    uint32_t         ntasks;     /* 12 */
    uint64_t         reg_id;     /* 16: the id in its name */
    uint64_t         job_hash;   /* 24 */
    uint32_t         bytes;      /* 32: size of the whole object */
    uint8_t          pad0[SHMB_CACHE_LINE - 36];
    _Atomic uint32_t wake;       /* 64: bumped to wake sleepers, futex word */
    _Atomic uint32_t sleepers;   /* 68: tasks that may sleep on wake */
    uint8_t          pad1[SHMB_CACHE_LINE - 8];
    _Atomic uint32_t release;    /* 128: hier: last barrier the leader released */
    _Atomic uint32_t status;     /* 132: hier: that release's result */
    uint8_t          pad2[SHMB_CACHE_LINE - 8];
    _Atomic uint32_t arrive[];   /* 192: see shmb_slot() */
} shmb_register_t;

/* Slot of local task i: 8 per cache line, the first half of each line. */
static inline _Atomic uint32_t *shmb_slot(shmb_register_t *g, size_t i)
{
    return &g->arrive[(i / SHMB_SLOTS_PER_LINE) * (SHMB_CACHE_LINE / 4) +
                      i % SHMB_SLOTS_PER_LINE];
}

/* CPU hint of local task i, in the second half of its slot's line: the
 * CPU it last ran on plus 1, 0 unknown. Written only with more tasks than
 * cores, read to tell whether a late task needs the reader's CPU; a stale
 * value costs time, never correctness. */
static inline _Atomic uint32_t *shmb_cpu_hint(shmb_register_t *g, size_t i)
{
    return shmb_slot(g, i) + SHMB_SLOTS_PER_LINE;
}

/* Local tasks a register may hold (its size is checked against it). */
#define SHMB_MAX_TASKS 4096
#define SHMB_REG_LINES(n) (((size_t)(n) + SHMB_SLOTS_PER_LINE - 1) /       \
                           SHMB_SLOTS_PER_LINE)
#define SHMB_REG_BYTES(n)                                                  \
    ((offsetof(shmb_register_t, arrive) +                                  \
      SHMB_CACHE_LINE * SHMB_REG_LINES(n) + 4095) & ~(size_t)4095)



_Static_assert(offsetof(shmb_region_t, reg_id) == 40, "region layout");
_Static_assert(offsetof(shmb_region_t, state) == 64, "region layout");
_Static_assert(offsetof(shmb_region_t, attached) == 128, "region layout");
_Static_assert(offsetof(shmb_region_t, pid) == 192, "region layout");
_Static_assert(offsetof(shmb_register_t, wake) == 64, "register layout");
_Static_assert(offsetof(shmb_register_t, sleepers) == 68, "register layout");
_Static_assert(offsetof(shmb_register_t, release) == 128, "register layout");
_Static_assert(offsetof(shmb_register_t, status) == 132, "register layout");
_Static_assert(offsetof(shmb_register_t, arrive) == 192, "register layout");

#endif /* SHM_LAYOUT_H */
