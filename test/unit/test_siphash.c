/*
 * SipHash-2-4 against the published reference vectors (key 00..0f,
 * message 00..len-1, the tag's bytes little-endian), and the memregion
 * wire decoder built on it: a region sealed by its owner decodes, any
 * changed byte of the sealed part, another job's secret or an owner
 * outside the job is refused before anything is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "siphash.h"

static const uint8_t vectors[17][8] = {
    {0x31, 0x0e, 0x0e, 0xdd, 0x47, 0xdb, 0x6f, 0x72},
    {0xfd, 0x67, 0xdc, 0x93, 0xc5, 0x39, 0xf8, 0x74},
    {0x5a, 0x4f, 0xa9, 0xd9, 0x09, 0x80, 0x6c, 0x0d},
    {0x2d, 0x7e, 0xfb, 0xd7, 0x96, 0x66, 0x67, 0x85},
    {0xb7, 0x87, 0x71, 0x27, 0xe0, 0x94, 0x27, 0xcf},
    {0x8d, 0xa6, 0x99, 0xcd, 0x64, 0x55, 0x76, 0x18},
    {0xce, 0xe3, 0xfe, 0x58, 0x6e, 0x46, 0xc9, 0xcb},
    {0x37, 0xd1, 0x01, 0x8b, 0xf5, 0x00, 0x02, 0xab},
    {0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93},
    {0xb0, 0xe4, 0xa9, 0x0b, 0xdf, 0x82, 0x00, 0x9e},
    {0xf3, 0xb9, 0xdd, 0x94, 0xc5, 0xbb, 0x5d, 0x7a},
    {0xa7, 0xad, 0x6b, 0x22, 0x46, 0x2f, 0xb3, 0xf4},
    {0xfb, 0xe5, 0x0e, 0x86, 0xbc, 0x8f, 0x1e, 0x75},
    {0x90, 0x3d, 0x84, 0xc0, 0x27, 0x56, 0xea, 0x14},
    {0xee, 0xf2, 0x7a, 0x8e, 0x90, 0xca, 0x23, 0xf7},
    {0xe5, 0x45, 0xbe, 0x49, 0x61, 0xca, 0x29, 0xa1},
    {0xdb, 0x9b, 0xc2, 0x57, 0x7f, 0xcc, 0x2a, 0x3f},
};

static void test_vectors(void **state)
{
    (void)state;
    uint8_t key[16], msg[17];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 17; i++)
        msg[i] = (uint8_t)i;
    for (size_t len = 0; len < 17; len++) {
        uint64_t tag = pami_siphash24(key, msg, len);
        uint8_t  le[8];
        for (int b = 0; b < 8; b++)
            le[b] = (uint8_t)(tag >> (8 * b));
        assert_memory_equal(le, vectors[len], 8);
        /* The same bytes at an odd address give the same tag, and so do
         * they in two parts (the first a multiple of 8 bytes). */
        uint8_t shifted[18];
        memcpy(shifted + 1, msg, len);
        assert_true(pami_siphash24(key, shifted + 1, len) == tag);
        for (size_t cut = 0; cut <= len; cut += 8)
            assert_true(pami_siphash24_2(key, msg, cut, msg + cut,
                                         len - cut) == tag);
    }
}

/* The documented wire form (docs/protocols/rma.md), built by hand. */
typedef struct {
    uint32_t magic;
    uint16_t version, rkey_len;
    uint32_t owner_task;
    uint16_t owner_ctx, reserved;
    uint32_t id, generation;
    uint64_t base, bytes, seal;
    uint8_t  rkey[PAMI_MEMREGION_SIZE - 48];
} doc_mr_t;

static void seal(doc_mr_t *m, const uint8_t *secret)
{
    uint8_t buf[sizeof(*m)];
    memcpy(buf, m, 40);
    memcpy(buf + 40, m->rkey, m->rkey_len);
    m->seal = pami_siphash24(secret, buf, 40 + m->rkey_len);
}

static void test_region_decode(void **state)
{
    (void)state;
    _Static_assert(sizeof(doc_mr_t) == PAMI_MEMREGION_SIZE, "layout");
    enum { NTASKS = 3 };
    uint8_t secrets[NTASKS * 16], other[16];
    for (size_t i = 0; i < sizeof(secrets); i++)
        secrets[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof(other); i++)
        other[i] = (uint8_t)(i * 5 + 3);
    doc_mr_t m = {.magic = 0x524d4150u, .version = 2, .rkey_len = 24,
                  .owner_task = 2, .owner_ctx = 1, .id = 5, .generation = 9,
                  .base = 0x7f0000001000ull, .bytes = 4096};
    for (int i = 0; i < 24; i++)
        m.rkey[i] = (uint8_t)(0xa0 + i);
    seal(&m, secrets + 2 * 16);

    pami_mr_view_t v;
    assert_int_equal(pami_mr_wire_decode(&m, sizeof(m), secrets, NTASKS, &v),
                     PAMI_MR_OK);
    assert_int_equal(v.owner_task, 2);
    assert_int_equal(v.owner_ctx, 1);
    assert_int_equal(v.id, 5);
    assert_int_equal(v.generation, 9);
    assert_true(v.base == m.base && v.bytes == m.bytes);
    assert_ptr_equal(v.rkey, (const uint8_t *)&m + 48);

    /* Every byte the seal covers, and the seal itself, matters. */
    size_t covered[] = {4 + 2, 8, 12, 16, 20, 24, 32, 40, 47, 48, 48 + 23};
    for (size_t i = 0; i < sizeof(covered) / sizeof(covered[0]); i++) {
        doc_mr_t bad = m;
        ((uint8_t *)&bad)[covered[i]] ^= 0x10;
        assert_int_not_equal(pami_mr_wire_decode(&bad, sizeof(bad), secrets,
                                                 NTASKS, &v), PAMI_MR_OK);
    }
    /* Key bytes past rkey_len are not part of the region. */
    doc_mr_t tail = m;
    tail.rkey[100] ^= 0xff;
    assert_int_equal(pami_mr_wire_decode(&tail, sizeof(tail), secrets, NTASKS,
                                         &v), PAMI_MR_OK);

    /* Sealed by another job's secret, or by another task of this one. */
    doc_mr_t foreign = m;
    seal(&foreign, other);
    assert_int_equal(pami_mr_wire_decode(&foreign, sizeof(foreign), secrets,
                                         NTASKS, &v), PAMI_MR_BAD_SEAL);
    seal(&foreign, secrets + 16);
    assert_int_equal(pami_mr_wire_decode(&foreign, sizeof(foreign), secrets,
                                         NTASKS, &v), PAMI_MR_BAD_SEAL);
    /* Random key bytes under a well-formed header. */
    doc_mr_t rnd = m;
    srand(12);
    for (size_t i = 0; i < sizeof(rnd.rkey); i++)
        rnd.rkey[i] = (uint8_t)rand();
    assert_int_equal(pami_mr_wire_decode(&rnd, sizeof(rnd), secrets, NTASKS,
                                         &v), PAMI_MR_BAD_SEAL);

    /* Form: owner outside the job, key length, version, reserved, size. */
    doc_mr_t f = m;
    f.owner_task = NTASKS;
    assert_int_equal(pami_mr_wire_decode(&f, sizeof(f), secrets, NTASKS, &v),
                     PAMI_MR_BAD_OWNER);
    f = m;
    f.rkey_len = 0;
    assert_int_equal(pami_mr_wire_decode(&f, sizeof(f), secrets, NTASKS, &v),
                     PAMI_MR_BAD_FORM);
    f.rkey_len = sizeof(f.rkey) + 1;
    assert_int_equal(pami_mr_wire_decode(&f, sizeof(f), secrets, NTASKS, &v),
                     PAMI_MR_BAD_FORM);
    f = m;
    f.version = 1;
    assert_int_equal(pami_mr_wire_decode(&f, sizeof(f), secrets, NTASKS, &v),
                     PAMI_MR_BAD_FORM);
    f = m;
    f.reserved = 0x8000; /* a flag bit this version does not know */
    assert_int_equal(pami_mr_wire_decode(&f, sizeof(f), secrets, NTASKS, &v),
                     PAMI_MR_BAD_FORM);
    assert_int_equal(pami_mr_wire_decode(&m, sizeof(m) - 1, secrets, NTASKS,
                                         &v), PAMI_MR_BAD_FORM);
    assert_int_equal(pami_mr_wire_decode(NULL, sizeof(m), secrets, NTASKS,
                                         &v), PAMI_MR_BAD_FORM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_region_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
