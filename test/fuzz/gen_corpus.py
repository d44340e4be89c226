#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target: test/fuzz/corpus/<target>/.

Each seed is a valid input or an edge case, laid out as the target's
comment says (its parameters first, then the bytes under test). The wire
layouts here follow docs/protocols/*.md and docs/pamirun.md; a change of
a wire format means a change here too. Run: python3 test/fuzz/gen_corpus.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
MR_SIZE = 256
# Seeds that once crashed a target are kept under corpus/<target>/ with
# names starting "crash-" and are never removed by this script.


def u8(v): return struct.pack("<B", v)
def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)


# Regions: version 2, sealed (docs/protocols/rma.md). The seal is left 0:
# the targets put the right one on when their input's flag says so.
def memregion(owner=1, ctx=0, base=0x10000, nbytes=4096, rkey_len=16,
              magic=0x524d4150, version=2, rid=0, gen=1, reserved=0):
    head = struct.pack("<IHHIHHIIQQQ", magic, version, rkey_len, owner, ctx,
                       reserved, rid, gen, base, nbytes, 0)
    key = bytes((i * 7 + 3) & 0xff for i in range(rkey_len))
    return (head + key).ljust(MR_SIZE, b"\0")[:MR_SIZE]


# ---- core: AM header, ack, barrier, probe, rendezvous request ----
def am_hdr(task, dispatch, ctx=0, flags=0):
    return struct.pack("<IHBB", task, dispatch, ctx, flags)


ACK, BARRIER, MONITOR, RNDV, RMA, RNDV_CHUNK, PROBE = (512, 513, 514, 515,
                                                   516, 517, 518)


def rts(dispatch=5, nbytes=4096, flags=0, base=0x10000, owner=1, mr=None):
    if mr is None:
        mr = memregion(owner=owner, base=base, nbytes=nbytes)
    return struct.pack("<IIQIIQ", 1, dispatch, nbytes, flags, 0, base) + mr


def am_input(hdr, data=b"", ntasks=4, nctx=1, desc=False, seal=True):
    return (u8(ntasks - 1) + u8(nctx - 1) + u16(len(hdr)) +
            u8((1 if desc else 0) | (2 if seal else 0)) + hdr + data)


def am_seeds():
    cookie = u64(0x0000000700000003)
    packed_uh = b"hdr!"
    yield "user", am_input(am_hdr(1, 5) + b"user header", b"payload")
    yield "user-ack", am_input(am_hdr(2, 7, flags=1) + cookie + b"uh", b"d")
    yield "packed", am_input(b"", am_hdr(1, 9, flags=2) +
                             u16(len(packed_uh)) + packed_uh + b"data")
    yield "packed-bad-len", am_input(b"", am_hdr(1, 9, flags=2) + u16(999))
    yield "ack", am_input(am_hdr(1, ACK) + struct.pack("<QiI", 3, 0, 0))
    yield "ack-bad-result", am_input(am_hdr(1, ACK) +
                                     struct.pack("<QiI", 3, 9999, 0))
    yield "barrier", am_input(am_hdr(3, BARRIER) + struct.pack("<II", 4, 2))
    yield "barrier-round64", am_input(am_hdr(3, BARRIER) +
                                      struct.pack("<II", 4, 64))
    yield "monitor", am_input(am_hdr(1, MONITOR))
    # Liveness probes (pami/liveness.c): an ask, an answer, and forged ones.
    yield "probe-ask", am_input(am_hdr(1, PROBE) + struct.pack("<B3xI", 1, 7))
    yield "probe-answer", am_input(am_hdr(2, PROBE) +
                                   struct.pack("<B3xI", 2, 7))
    yield "probe-bad-kind", am_input(am_hdr(1, PROBE) +
                                     struct.pack("<B3xI", 9, 7))
    yield "probe-reserved", am_input(am_hdr(1, PROBE) +
                                     struct.pack("<BBBBI", 1, 0, 5, 0, 7))
    yield "probe-long", am_input(am_hdr(1, PROBE) +
                                 struct.pack("<B3xII", 1, 7, 0))
    yield "rndv", am_input(am_hdr(1, RNDV, flags=1) + cookie + rts() + b"uh")
    yield "rndv-cma", am_input(am_hdr(1, RNDV, flags=1) + cookie +
                               rts(flags=1, mr=bytes(MR_SIZE)))
    yield "origin-outside", am_input(am_hdr(9, 5), ntasks=4)
    yield "ctx-outside", am_input(am_hdr(1, 5, ctx=3), nctx=2)
    yield "short", am_input(b"\1\0\0")
    yield "empty", b""
    yield "ucx-rndv", am_input(am_hdr(1, 5), b"x" * 64, desc=True)


def rndv_input(origin, body, seal=True, ntasks=4):
    return u8(1 if seal else 0) + u8(ntasks - 1) + u32(origin) + body


def rndv_seeds():
    yield "mr", rndv_input(1, rts(owner=1) + b"user header")
    yield "mr-unsealed", rndv_input(1, rts(owner=1), seal=False)
    yield "cma", rndv_input(1, rts(flags=1, mr=bytes(MR_SIZE)))
    yield "wrong-owner", rndv_input(2, rts(owner=1))
    yield "owner-outside", rndv_input(9, rts(owner=9))
    yield "bad-version", rndv_input(1, struct.pack("<I", 2) + rts()[4:])
    yield "unknown-flag", rndv_input(1, rts(flags=4))
    yield "msg", rndv_input(1, rts(flags=2, base=0, mr=bytes(MR_SIZE)) +
                            b"user header")
    yield "msg-with-mr", rndv_input(1, rts(flags=2, owner=1))
    yield "msg-and-cma", rndv_input(1, rts(flags=3, base=0,
                                           mr=bytes(MR_SIZE)))
    yield "msg-empty", rndv_input(1, rts(flags=2, nbytes=0, base=0,
                                         mr=bytes(MR_SIZE)))
    # The first chunk with the request (DATA), and NOACK: only with MSG
    # and DATA and a payload of one chunk (256 KiB) at most.
    zero = bytes(MR_SIZE)
    yield "msg-data", rndv_input(1, rts(flags=6, base=0, mr=zero))
    yield "noack", rndv_input(1, rts(flags=0xE, base=0, mr=zero))
    yield "noack-cap", rndv_input(1, rts(flags=0xE, nbytes=262144, base=0,
                                         mr=zero))
    yield "noack-over-cap", rndv_input(1, rts(flags=0xE, nbytes=262145,
                                              base=0, mr=zero))
    yield "noack-without-data", rndv_input(1, rts(flags=0xA, base=0,
                                                  mr=zero))
    yield "noack-cma", rndv_input(1, rts(flags=0x9, mr=zero))
    yield "data-cma", rndv_input(1, rts(flags=0x5, mr=zero))
    yield "noack-alone", rndv_input(1, rts(flags=0x8, owner=1))
    yield "bytes-differ", rndv_input(1, rts(mr=memregion(nbytes=1)))
    yield "short", rndv_input(1, rts()[:100])


# The origin-served rendezvous: FETCH and DATA (rendezvous.md).
def chunk(ctype=1, result=0, send=0x0000000500000002, recv=0x0000000900000004,
          offset=0, nbytes=262144, version=1, reserved=0):
    return struct.pack("<IIiIQQQQ", version, ctype, result, reserved, send,
                       recv, offset, nbytes)


def chunk_input(msg, data=b"", total=1 << 20, chunk_kib=256, lo=0, ahead=4,
                got=0):
    return (u8(1 if data else 0) + u64(total) + u8(chunk_kib - 1) + u16(lo) +
            u8(ahead) + u64(got) + msg + data)


def rndv_chunk_seeds():
    yield "fetch", chunk_input(chunk())
    yield "fetch-last", chunk_input(chunk(offset=786432, nbytes=262144))
    yield "data", chunk_input(chunk(2, nbytes=1024, offset=0), b"d" * 1024,
                              total=1024, chunk_kib=1)
    yield "data-second", chunk_input(chunk(2, nbytes=1024, offset=1024),
                                     b"e" * 1024, total=2048 + 7,
                                     chunk_kib=1, got=0)
    yield "data-tail", chunk_input(chunk(2, nbytes=7, offset=2048), b"t" * 7,
                                   total=2048 + 7, chunk_kib=1, ahead=3)
    yield "data-here-already", chunk_input(chunk(2, nbytes=1024, offset=0),
                                           b"d" * 1024, total=4096,
                                           chunk_kib=1, got=1)
    yield "data-refused", chunk_input(chunk(2, result=3))
    yield "data-bad-result", chunk_input(chunk(2, result=9999))
    yield "data-short-data", chunk_input(chunk(2, nbytes=64), b"x" * 10)
    yield "fetch-with-data", chunk_input(chunk(1, nbytes=8), b"y" * 8)
    yield "fetch-overflow", chunk_input(chunk(offset=(1 << 64) - 16,
                                              nbytes=4096))
    yield "fetch-too-big", chunk_input(chunk(nbytes=(4 << 20) + 1))
    yield "bad-version", chunk_input(chunk(version=2))
    yield "bad-type", chunk_input(chunk(ctype=3))
    yield "reserved", chunk_input(chunk(reserved=1))
    yield "short", chunk_input(chunk()[:40])


# The split read on one node: ASK and DONE (rendezvous.md).
def write_msg(wtype=1, result=0, send=0x0000000500000002,
              recv=0x0000000900000004, offset=4 << 20, nbytes=4 << 20,
              dest=0x7f0000400000, version=1, reserved=0):
    return struct.pack("<IIiIQQQQQ", version, wtype, result, reserved, send,
                       recv, offset, nbytes, dest)


def rndv_write_seeds():
    yield "ask", u8(0) + write_msg()
    yield "done", u8(0) + write_msg(2)
    yield "done-eagain", u8(0) + write_msg(2, result=1)
    yield "done-bad-result", u8(0) + write_msg(2, result=9999)
    yield "ask-with-result", u8(0) + write_msg(result=3)
    yield "ask-with-data", u8(1) + write_msg() + b"x" * 16
    yield "dest-wraps", u8(0) + write_msg(dest=(1 << 64) - 4096)
    yield "offset-wraps", u8(0) + write_msg(offset=(1 << 64) - 1)
    yield "dest-zero", u8(0) + write_msg(dest=0)
    yield "empty", u8(0) + write_msg(nbytes=0)
    yield "bad-type", u8(0) + write_msg(3)
    yield "bad-version", u8(0) + write_msg(version=2)
    yield "reserved", u8(0) + write_msg(reserved=1)
    yield "short", u8(0) + write_msg()[:40]


# One-sided operations through the owner (rma.md): the 64-byte message.
def rma_msg(mtype=1, op=0, size=0, result=0, cookie=0x0000000300000007,
            owner_ctx=0, rid=2, generation=1, offset=64, nbytes=8,
            operand=0, compare=0, version=1, reserved=0):
    return struct.pack("<BBBBiQIIIIQQQQ", version, mtype, op, size, result,
                       cookie, owner_ctx, rid, generation, reserved, offset,
                       nbytes, operand, compare)


def rma_seeds():
    yield "put", u8(1) + rma_msg() + b"p" * 8
    yield "put-short-data", u8(1) + rma_msg(nbytes=16) + b"p" * 8
    yield "get", u8(0) + rma_msg(2, nbytes=4096)
    yield "get-with-data", u8(1) + rma_msg(2) + b"g" * 8
    yield "atomic-add", u8(0) + rma_msg(3, op=3, size=8, operand=5)
    yield "atomic-cswap4", u8(0) + rma_msg(3, op=2, size=4, nbytes=4,
                                           operand=1, compare=0)
    yield "atomic-bad-size", u8(0) + rma_msg(3, op=3, size=2, nbytes=2)
    yield "atomic-bad-op", u8(0) + rma_msg(3, op=9, size=8)
    yield "reply", u8(1) + rma_msg(4, result=0) + b"r" * 8
    yield "reply-bad-result", u8(0) + rma_msg(4, result=9999)
    yield "fence", u8(0) + rma_msg(5, nbytes=0)
    yield "put-done", u8(1) + rma_msg(6, nbytes=24) + struct.pack("<QQQ", 1, 2, 3)
    yield "put-done-too-many", u8(1) + rma_msg(6, nbytes=33 * 8) + b"c" * (33 * 8)
    yield "put-done-odd", u8(1) + rma_msg(6, nbytes=12) + b"c" * 12
    yield "put-done-failed", u8(1) + rma_msg(6, result=3, nbytes=8) + b"c" * 8
    yield "help-put", u8(0) + rma_msg(7, op=0, result=5, nbytes=1 << 22,
                                      operand=0x7f0000001000,
                                      compare=(1 << 62) | 9)
    yield "help-get", u8(0) + rma_msg(7, op=1, result=5, nbytes=1 << 22,
                                      operand=0x7f0000001000,
                                      compare=(1 << 62) | 10)
    yield "help-no-token", u8(0) + rma_msg(7, op=0, result=5)
    yield "help-bad-fd", u8(0) + rma_msg(7, op=1, result=-1, compare=1)
    yield "help-with-data", u8(1) + rma_msg(7, result=5, compare=1) + b"h" * 8
    # CLAIMS (type 10): the handle of the origin's page of claim words
    yield "claims", u8(1) + rma_msg(10, nbytes=256) + b"m" * 256
    yield "claims-short", u8(1) + rma_msg(10, nbytes=256) + b"m" * 255
    yield "claims-bytes", u8(1) + rma_msg(10, nbytes=255) + b"m" * 255
    yield "claims-op", u8(1) + rma_msg(10, op=1, nbytes=256) + b"m" * 256
    yield "claims-result", u8(1) + rma_msg(10, result=3, nbytes=256) + \
        b"m" * 256
    # a claimed PUT and FENCE carry their claim number in compare
    yield "put-claimed", u8(1) + rma_msg(compare=7) + b"p" * 8
    # a quiet PUT (op 1): claimed, never answered; unclaimed or another
    # op is refused
    yield "put-quiet", u8(1) + rma_msg(op=1, cookie=0, compare=8) + b"q" * 8
    yield "put-quiet-unclaimed", u8(1) + rma_msg(op=1, cookie=0) + b"q" * 8
    yield "put-bad-op", u8(1) + rma_msg(op=2, compare=9) + b"q" * 8
    quiet = rma_msg(1, op=1, cookie=0, nbytes=4, compare=10) + b"d" * 4
    yield "requests-quiet", u8(1) + rma_msg(9, nbytes=len(quiet)) + quiet
    yield "fence-claimed", u8(0) + rma_msg(5, nbytes=0, compare=(1 << 63) | 3)
    # a claimed GET: its number in compare, never with bit 63 (busy)
    yield "get-claimed", u8(0) + rma_msg(2, nbytes=1024, compare=11)
    yield "get-claimed-busy", u8(0) + rma_msg(2, nbytes=1024,
                                              compare=(1 << 63) | 11)
    gets = (rma_msg(2, nbytes=512, compare=12) +
            rma_msg(2, cookie=0x000000030000000a, nbytes=512, compare=13))
    yield "requests-get-claimed", u8(1) + rma_msg(9, nbytes=len(gets)) + gets
    # REPLIES: REPLY messages, each with its data, back to back.
    two = (rma_msg(4, nbytes=8) + b"a" * 8 +
           rma_msg(4, cookie=0x0000000300000008, nbytes=0, operand=7))
    yield "replies", u8(1) + rma_msg(8, nbytes=len(two)) + two
    yield "replies-one", u8(1) + rma_msg(8, nbytes=72) + rma_msg(4) + b"r" * 8
    bad = rma_msg(4, nbytes=0) + rma_msg(2, nbytes=0)
    yield "replies-not-reply", u8(1) + rma_msg(8, nbytes=len(bad)) + bad
    over = rma_msg(4, nbytes=64) + b"o" * 8
    yield "replies-overrun", u8(1) + rma_msg(8, nbytes=len(over)) + over
    tail = rma_msg(4, nbytes=0) + b"t" * 20
    yield "replies-tail", u8(1) + rma_msg(8, nbytes=len(tail)) + tail
    yield "replies-length", u8(1) + rma_msg(8, nbytes=200) + two
    # REQUESTS: PUT (with its data) and GET messages, back to back.
    reqs = (rma_msg(1, nbytes=4) + b"d" * 4 +
            rma_msg(2, cookie=0x0000000300000009, nbytes=4096))
    yield "requests", u8(1) + rma_msg(9, nbytes=len(reqs)) + reqs
    bad = rma_msg(1, nbytes=4) + b"d" * 4 + rma_msg(3, op=3, size=8)
    yield "requests-atomic", u8(1) + rma_msg(9, nbytes=len(bad)) + bad
    over = rma_msg(1, nbytes=100) + b"d" * 8
    yield "requests-overrun", u8(1) + rma_msg(9, nbytes=len(over)) + over
    yield "bad-type", u8(0) + rma_msg(10)
    yield "bad-version", u8(0) + rma_msg(version=2)
    yield "reserved", u8(0) + rma_msg(reserved=1)
    yield "short", u8(0) + rma_msg()[:40]


def mr_input(mr, seal=True, ntasks=4):
    return u8(1 if seal else 0) + u8(ntasks - 1) + mr


# Gathered eager sends (am.md, "SENDS"): the 8-byte core payload, then
# records padded to 8 bytes.
def sends_rec(dispatch=7, uhdr=b"", data=b"", pad=None):
    body = struct.pack("<HHI", dispatch, len(uhdr), len(data)) + uhdr + data
    n = (-len(body)) % 8 if pad is None else pad
    return body + b"\0" * n


def sends_seeds():
    two = sends_rec(uhdr=b"h" * 8, data=b"d" * 13) + sends_rec(300, data=b"x" * 4)
    yield "two", u8(1) + struct.pack("<II", 2, 0) + two
    yield "one-empty", u8(1) + struct.pack("<II", 1, 0) + sends_rec()
    yield "count-high", u8(1) + struct.pack("<II", 3, 0) + two
    yield "count-zero", u8(1) + struct.pack("<II", 0, 0) + two
    yield "core-id", u8(1) + struct.pack("<II", 1, 0) + sends_rec(512)
    yield "uhdr-long", u8(1) + struct.pack("<II", 1, 0) + sends_rec(uhdr=b"u" * 1025)
    yield "data-past-end", u8(1) + struct.pack("<II", 1, 0) + struct.pack("<HHI", 1, 0, 4096) + b"d" * 8
    yield "no-pad", u8(1) + struct.pack("<II", 1, 0) + sends_rec(data=b"d" * 3, pad=0)
    yield "reserved", u8(1) + struct.pack("<II", 2, 1) + two
    yield "no-data", u8(0) + struct.pack("<II", 1, 0)


def memregion_seeds():
    yield "valid", mr_input(memregion())
    yield "unsealed", mr_input(memregion(), seal=False)
    yield "rkey-max", mr_input(memregion(rkey_len=MR_SIZE - 48))
    yield "rkey-over", mr_input(memregion(rkey_len=MR_SIZE - 47))
    yield "rkey-zero", mr_input(memregion(rkey_len=0))
    yield "bad-magic", mr_input(memregion(magic=0x12345678))
    yield "version-1", mr_input(memregion(version=1))
    yield "reserved", mr_input(memregion(reserved=1))
    yield "owner-outside", mr_input(memregion(owner=4))
    yield "one-shot", mr_input(memregion(rid=0xffffffff))
    yield "short", mr_input(memregion()[:255])
    yield "zeros", mr_input(bytes(MR_SIZE))


# ---- barrier packets ----
def bp(size=4, epoch=0, group=0x1234, version=1, ptype=1, r0=0, r1=0):
    return struct.pack("<BBHIIIQ", version, ptype, r0, size, epoch, r1, group)


def bp_seeds():
    yield "valid", u16(8) + u8(0) + bp()
    yield "epoch-wrap", u16(8) + u8(0) + bp(epoch=0xffffffff)
    yield "size-over", u16(4) + u8(0) + bp(size=5)
    yield "size-one", u16(4) + u8(0) + bp(size=1)
    yield "with-data", u16(4) + u8(3) + bp()
    yield "long", u16(4) + u8(0) + bp() + b"x"
    yield "short", u16(4) + u8(0) + bp()[:20]
    yield "reserved", u16(4) + u8(0) + bp(r0=1)
    yield "version", u16(4) + u8(0) + bp(version=2)


def bp_record(frm, pkt, offset=0):
    return u16(frm) + u8(offset) + u8(len(pkt)) + pkt


def world_group(n):
    """bp_group_seed(0, n) + the sum of bp_group_term(t) (bp_wire.h)."""
    m = (1 << 64) - 1

    def mix(x):
        x = (x + 0x9e3779b97f4a7c15) & m
        x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & m
        x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & m
        return x ^ (x >> 31)
    g = mix(0x6270000000000000 ^ n)
    for t in range(n):
        g = (g + mix((t + 0x5851f42d4c957f2d) & m)) & m
    return g


def bp_state_seeds():
    w = world_group(4)
    yield "world-arrivals", u8(2) + b"".join(
        bp_record(t, bp(size=4, group=w)) for t in (1, 2, 3))
    yield "world-excess", u8(2) + b"".join(
        bp_record(1, bp(size=4, group=w)) for _ in range(5))
    yield "world-next-epoch", u8(2) + bp_record(1, bp(size=4, epoch=1,
                                                      group=w))
    yield "world-wrong-size", u8(2) + bp_record(1, bp(size=3, group=w))
    yield "foreign", u8(2) + bp_record(1, bp(size=2, group=0x99)) + \
        bp_record(1, bp(size=2, group=0x99)) + \
        bp_record(2, bp(size=3, group=0x99))
    yield "foreign-epoch1", u8(2) + bp_record(1, bp(size=2, epoch=1,
                                                    group=0x98))
    yield "from-self", u8(2) + bp_record(0, bp(size=4, group=w))
    yield "other-offset", u8(2) + bp_record(1, bp(size=4, group=w), offset=1)
    yield "many-groups", u8(2) + b"".join(
        bp_record(1, bp(size=2, group=g)) for g in range(40))


# ---- collectives ----
KIND_CREATE = 15


def coll(ctype=1, flags=0, kind=3, seq=5, connid=None, total=64, offset=0,
         version=2):
    if connid is None:
        connid = seq % 256
    return struct.pack("<BBBBHHIIIIIQQ", version, ctype, flags, 0, connid,
                       kind, 7, seq, 0, 1, 0xabcd, total, offset)


def coll_seeds():
    yield "data", u32(64) + coll()
    yield "piece", u32(16) + coll(total=64, offset=48)
    yield "piece-over", u32(17) + coll(total=64, offset=48)
    yield "offset-wrap", u32(1) + coll(total=2**64 - 1, offset=2**64 - 1)
    yield "create", u32(8) + coll(flags=1, kind=KIND_CREATE, total=8)
    yield "create-mismatch", u32(8) + coll(flags=0, kind=KIND_CREATE)
    yield "abort", u32(0) + coll(ctype=2, total=0)
    yield "abort-data", u32(4) + coll(ctype=2)
    yield "connid", u32(0) + coll(seq=300, connid=300 % 256 + 1)
    yield "version", u32(0) + coll(version=1)
    yield "short", u32(0) + coll()[:43]


# ---- SVD ----
SVD_V = 2  # svd_wire.h SVD_WIRE_VERSION
PKT = dict(FETCH=0, ENTRY=1, RELEASE=2, NOTIFY=3, ACK=4, CHUNK=5, FETCHED=6)
REC_HDR = 40 + MR_SIZE


def record(data=b"runtime data", version=3, flags=0, dsize=None):
    if dsize is None:
        dsize = len(data)
    mr = memregion() if flags & 1 else bytes(MR_SIZE)
    return struct.pack("<BBHIQQQQ", SVD_V, flags, 0, 0, 0x20000, 4096, version,
                       dsize) + mr + data


def notify(htype=1, sched=1, fanout=2, owner=0, ntasks=2, rec_len=None,
           chunk=0, ready=0, version=3):
    rec = record(version=version)
    if rec_len is None:
        rec_len = len(rec)
    h = struct.pack("<BBBBHHQIIQQQQQ", SVD_V, PKT["NOTIFY"], htype, sched, fanout,
                    0, 42, owner, ntasks, version, rec_len, chunk, ready, 0)
    return h + (memregion() if htype == 2 else bytes(MR_SIZE)), rec


def svd_input(ptype, hdr, data=b"", ntasks=4, me=1, maxrec=1 << 20):
    return (u8(ptype) + u16(ntasks - 1) + u16(me) + u32(maxrec) +
            u16(len(hdr)) + hdr + data)


def svd_seeds():
    h, rec = notify()
    # two users: their task ids, then their tags
    tasks = u32(2) + u32(3) + bytes(range(16))
    yield "notify-inline", svd_input(3, h, tasks + rec)
    h, _ = notify(htype=2, sched=3, chunk=4096, ready=100, rec_len=REC_HDR + 5000)
    yield "notify-get-pipeline", svd_input(3, h, tasks)
    h, rec = notify(owner=1)
    yield "notify-owner-me", svd_input(3, h, tasks + rec)
    h, rec = notify(rec_len=10)
    yield "notify-rec-short", svd_input(3, h, tasks + rec)
    h, rec = notify(ntasks=0x40000000)
    yield "notify-ntasks-huge", svd_input(3, h, tasks + rec)
    yield "fetch", svd_input(0, struct.pack("<BBHIQ", SVD_V, 0, 0, 9, 42) +
                            bytes(range(16)))
    yield "release", svd_input(2, struct.pack("<BBHIQ", SVD_V, 2, 0, 0, 42))
    yield "ack", svd_input(4, struct.pack("<BBBBIQQ", SVD_V, 4, 0, 0, 0, 42, 3))
    yield "chunk", svd_input(5, struct.pack("<BBBBIQQQ", SVD_V, 5, 0, 0, 0, 42,
                                            3, 100))
    yield "fetched", svd_input(6, struct.pack("<BBHIQQ", SVD_V, 6, 0, 9, 42, 3))
    entry = struct.pack("<BBBBIQQQ", SVD_V, 1, 0, 0, 9, 42, 3,
                        len(record())) + bytes(MR_SIZE)
    yield "entry-record", svd_input(1, entry, record())
    yield "entry-bad-record", svd_input(1, entry, record(dsize=1000))
    yield "wrong-type", svd_input(0, struct.pack("<BBHIQ", SVD_V, 3, 0, 9, 42))
    yield "short", svd_input(3, b"\1\3")


# ---- the shared-memory collectives' segment ----
CSHM_MAGIC = 0x316d6873696d6170
CSHM_RING, CSHM_RING_MAX, CSHM_LINE = 64, 4096, 64
CSHM_RING_ENTRY = 32 + CSHM_RING_MAX + 32


def cshm_input(nlocal=4, me=1, root=0, slot=256, sig=0x1234, total=64,
               jhash=42, target=3, k=5, hdr=b"", ring=b""):
    return (u8(nlocal - 1) + u8(me) + u8(root) + u8(slot // 64 - 1) + u32(sig) +
            u16(total) + u64(jhash) + u64(target) + u64(k) + u16(len(hdr)) +
            hdr + ring)


def cshm_hdr(nlocal=4, slot=256, jhash=42, attached=4, version=3,
             hdr_bytes=None, lines=()):
    if hdr_bytes is None:
        hdr_bytes = (256 + 2 * nlocal * 64 + 4095) // 4096 * 4096
    h = struct.pack("<QIIQQQIII", CSHM_MAGIC, version, nlocal, slot,
                    hdr_bytes, jhash, attached, 0, 0)
    h += bytes(256 - len(h))
    for sig, seq in lines:  # control lines (task, parity) in order
        h += struct.pack("<IIQ", sig, 0, seq) + bytes(CSHM_LINE - 16)
    return h


def cshm_ring(nlocal=4, done=(), arrived=(), k=5, seq=None, claim=None,
              sig=0x1234, length=64):
    r = b""
    for i in range(nlocal):
        d = done[i] if i < len(done) else 0
        a = arrived[i] if i < len(arrived) else 0
        r += struct.pack("<QQ", d, a) + bytes(CSHM_LINE - 16)
    entries = bytearray(CSHM_RING * CSHM_RING_ENTRY)
    off = (k % CSHM_RING) * CSHM_RING_ENTRY
    entries[off:off + 24] = struct.pack("<QQII", k + 1 if seq is None else seq,
                                        k + 1 if claim is None else claim,
                                        sig, length)
    data = min(length, 256)
    entries[off + 32:off + 32 + data] = bytes(range(data))
    return r + bytes(entries[:off + 32 + data + 8])


def cshm_seeds():
    lines = [(0x1234, 3)] * 8
    yield "round-there", cshm_input(hdr=cshm_hdr(lines=lines))
    yield "round-ahead", cshm_input(hdr=cshm_hdr(lines=lines[:2] +
                                                [(0x1234, 9)] + lines[3:]))
    yield "round-not-yet", cshm_input(target=4, hdr=cshm_hdr(lines=lines))
    yield "hdr-other-job", cshm_input(hdr=cshm_hdr(jhash=43))
    yield "hdr-layout", cshm_input(hdr=cshm_hdr(hdr_bytes=1 << 60))
    yield "hdr-attached", cshm_input(hdr=cshm_hdr(attached=0xffffffff))
    yield "hdr-huge-nlocal", cshm_input(hdr=cshm_hdr(nlocal=1 << 31))
    yield "ring-entry", cshm_input(ring=cshm_ring(arrived=(6, 6, 6, 6)))
    yield "ring-entry-long", cshm_input(ring=cshm_ring(length=0xffffffff))
    yield "ring-entry-ahead", cshm_input(ring=cshm_ring(seq=5 + 65))
    yield "ring-no-root", cshm_input(ring=cshm_ring(seq=0, claim=0,
                                                    arrived=(6, 6, 6, 6)))
    yield "ring-all-done", cshm_input(ring=cshm_ring(seq=0, claim=6,
                                                     done=(6, 0, 6, 6)))
    yield "ring-root-wait", cshm_input(k=70, ring=cshm_ring(k=70,
                                                            done=(7, 7, 1, 7)))


# ---- shared-memory barrier records ----
REGION_MAGIC = 0x524d4853494d4150
REG_MAGIC = 0x424d4853494d4150


def region(n, job=0x5eed, leader=1, offset=0, reg_id=0x77, state=2,
           attached=1, magic=REGION_MAGIC, nbytes=None):
    if nbytes is None:
        nbytes = 192 + 4 * n
    head = struct.pack("<QIIQIIIIQ", magic, 1, nbytes, job, n, leader, offset,
                       4242, reg_id).ljust(64, b"\0")
    return (head + u32(state).ljust(64, b"\0") +
            u32(attached).ljust(64, b"\0") + bytes(4 * n))


def register(n, job=0x5eed, reg_id=0x77, magic=REG_MAGIC):
    size = (192 + 64 * ((n + 7) // 8) + 4095) & ~4095
    head = struct.pack("<QIIQQI", magic, 1, n, reg_id, job, size)
    return head.ljust(192, b"\0"), size


def shmb_input(n, me, reg_bytes_fn=None, region_bytes=None, job=0x5eed,
               offset=0, reg_args=None):
    r = region_bytes if region_bytes is not None else region(n, job=job)
    g, gsize = register(n, job=job, **(reg_args or {}))
    return (u8(n - 1) + u8(me) + u64(job) + u8(offset) + u16(len(r)) + r +
            u16(gsize) + g)


def shmb_seeds():
    yield "two", shmb_input(2, 1)
    yield "nine", shmb_input(9, 4)
    yield "foreign-job", shmb_input(2, 1, region_bytes=region(2, job=1))
    yield "bad-size-field", shmb_input(2, 1, region_bytes=region(2, nbytes=9))
    yield "state-zero", shmb_input(3, 2, region_bytes=region(3, state=0))
    yield "attached-over", shmb_input(3, 2, region_bytes=region(3, attached=9))
    yield "reg-magic", shmb_input(2, 1, reg_args={"magic": 1})
    yield "reg-id", shmb_input(2, 1, reg_args={"reg_id": 5})
    yield "unpublished", shmb_input(2, 1, region_bytes=region(2, magic=0))
    yield "truncated", u8(1) + u8(1) + u64(0x5eed) + u8(0) + u16(100) + \
        region(2)[:100]


# ---- config ----
def config_seeds():
    yield "defaults", b"\0".join([b"warn", b"auto", b"0", b"200", b"1024",
                                  b"65536", b"1", b"10000"])
    yield "sizes", b"\0".join([b"debug", b"local", b"yes", b"4k", b"1M",
                               b"2G", b"off", b"0"])
    yield "overflow", b"\0".join([b"9", b"x" * 40, b"maybe",
                                  b"18446744073709551615", b"17179869184G",
                                  b"-1", b"", b"12x"])
    yield "parsers", b"\0" * 8 + b"\0".join([b"1k", b"TRUE", b"007", b"K"])


# ---- bootstrap: what pamirun sends, and what ranks send pamirun ----
WIRE_MAGIC = 0x494d4150
HELLO, WELCOME, CONTRIB, RESULT, BYE = 1, 2, 3, 4, 5


def wire(mtype, rank=0, size=2, seq=0, status=0, length=0, magic=WIRE_MAGIC,
         version=1):
    return struct.pack("<IHHIIQiIQ", magic, version, mtype, rank, size, seq,
                       status, 0, length)


def bootstrap_input(size, rank, length, calls, stream):
    return u8(size - 1) + u8(rank) + u16(length) + u8(calls) + stream


def bootstrap_seeds():
    w = wire(WELCOME, rank=1, size=2)
    yield "welcome", bootstrap_input(2, 1, 0, 0, w)
    res = b"".join(wire(RESULT, rank=1, size=2, seq=s, length=2 * 8) +
                   bytes(range(16)) for s in range(3))
    yield "allgathers", bootstrap_input(2, 1, 8, 3, w + res)
    yield "result-long", bootstrap_input(2, 1, 8, 1, w +
                                         wire(RESULT, rank=1, seq=0,
                                              length=1 << 40))
    yield "result-error", bootstrap_input(2, 1, 8, 1, w +
                                          wire(RESULT, rank=1, seq=0,
                                               status=-22))
    yield "bad-status", bootstrap_input(2, 1, 8, 1, w +
                                        wire(RESULT, rank=1, status=5))
    yield "wrong-seq", bootstrap_input(2, 1, 8, 1, w +
                                       wire(RESULT, rank=1, seq=9, length=16))
    yield "refused", bootstrap_input(2, 1, 0, 0, wire(WELCOME, rank=1,
                                                      status=-16))
    yield "welcome-size", bootstrap_input(2, 1, 0, 0, wire(WELCOME, rank=1,
                                                           size=3))
    yield "bad-magic", bootstrap_input(2, 1, 0, 0, wire(WELCOME, magic=1))
    yield "closed", bootstrap_input(2, 1, 0, 0, b"")


def pamirun_input(size, gone, conns, stranger=False):
    out = u8(size - 1) + u8((len(conns) - 1) | (0x80 if stranger else 0)) + \
        u8(gone)
    for c in conns:
        out += u16(len(c)) + c
    return out


def pamirun_seeds():
    def rank(r, size=2, rounds=2, length=8):
        s = wire(HELLO, rank=r, size=size)
        for q in range(rounds):
            s += wire(CONTRIB, rank=r, size=size, seq=q, length=length)
            s += bytes([r]) * length
        return s + wire(BYE, rank=r, size=size)
    yield "job", pamirun_input(2, 255, [rank(0), rank(1)])
    yield "rank-gone", pamirun_input(3, 2, [rank(0, 3), rank(1, 3)])
    yield "lengths-differ", pamirun_input(2, 255, [rank(0, length=8),
                                                   rank(1, length=4)])
    yield "two-sessions", pamirun_input(2, 255, [rank(0), rank(1), rank(0),
                                                 rank(1)])
    yield "huge-contrib", pamirun_input(2, 255, [
        wire(HELLO, rank=0) + wire(CONTRIB, rank=0, length=1 << 40)])
    yield "rank-outside", pamirun_input(2, 255, [wire(HELLO, rank=7)])
    yield "hello-twice", pamirun_input(2, 255, [wire(HELLO) + wire(HELLO)])
    yield "contrib-first", pamirun_input(2, 255, [wire(CONTRIB, length=4) +
                                                  b"abcd"])
    yield "garbage", pamirun_input(1, 255, [bytes(range(64))])
    yield "stranger", pamirun_input(2, 255, [rank(0), rank(1)], stranger=True)
    yield "strangers-silent", pamirun_input(2, 255, [b"", b"", b"", b""],
                                            stranger=True)


# ---- the collectives' profile file (docs/tuning.md) ----
def profile(entries, version=1):
    import json
    return json.dumps({
        "format_version": version, "producer": "pami 0.1.0",
        "machine": {"cpu": "x86_64", "ucx": "1.16.0", "transports": "shm",
                    "cores": 2, "nodes": 1, "tasks_per_node": 4},
        "entries": entries}, indent=1).encode()


def prof_entry(coll="allreduce", algo="allreduce_ring", size=4, nbytes=64,
               typ="int32", op="sum", failed=None):
    e = {"collective": coll, "algorithm": algo,
         "shape": {"size": size, "nodes": 1, "tasks_per_node": size,
                   "layout": "contiguous"},
         "type": typ, "op": op, "bytes": nbytes}
    if failed:
        e["failed"] = failed
    else:
        e["metrics"] = {"median_us": 3.5, "min_us": 3.0, "max_us": 9.25,
                        "count": 100}
    return e


def profile_seeds():
    yield "two", profile([prof_entry(), prof_entry(
        "broadcast", "broadcast_binomial", 8, 4096, "byte", "none")])
    yield "failed", profile([prof_entry(failed="deadline")])
    yield "empty", profile([])
    yield "duplicate", profile([prof_entry(), prof_entry()])
    yield "unknown-op", profile([prof_entry(op="avg")])
    yield "version-2", profile([prof_entry()], version=2)
    yield "huge-bytes", profile([prof_entry(nbytes=2**41)])
    yield "truncated", profile([prof_entry()])[:120]
    yield "not-json", b"{ \"format_version\": 1, [ }"


def shmq_raw(nlines=1, kind=1, flags=3, hdr=8, frag=18, total=18, move=1,
             payload=b""):
    return (u8(0) + u16(nlines) + u8(kind) + u8(flags) + u16(hdr) + u16(frag)
            + u32(total) + u8(move - 1) + payload)


def shmq_msg(hdr, data, grow=False):
    return u8(3 if grow else 1) + u16(hdr) + u16(data)


def shmq_ref_msg(hdr, data, batch=False):
    # kind 9 (bit 3, odd): by reference; bit 4: no poll after it
    return u8(9 | (16 if batch else 0)) + u16(hdr) + u16(data)


def shmq_raw_ref(hdr=8, damage=0, offset=0, length=100, addr=None):
    b = u8(2) + u8(hdr) + u8(damage | (16 if addr is not None else 0))
    b += u32(offset & 0xffffffff)
    if addr is not None:
        b += u32(addr >> 32) + u32(addr & 0xffffffff)
    return b + u32(length)


def shmq_seeds():
    """test/fuzz/fuzz_shmq.c: ring of 64 lines, entries of 32, 64 KiB,
    the producer's lap the whole ring (or 16 lines and entries of 8 until
    it grows)."""
    head = u8(0) + u8(31) + u8(63) + u8(0)
    msgs = [(8, 10), (8, 200), (18, 3000), (0, 0), (100, 9000), (8, 40)]
    yield "round-trip", head + b"".join(
        shmq_msg(h, d) for h, d in msgs * 4)
    short = u8(0) + u8(31) + u8(63) + u8(2)
    yield "short-lap-grow", short + b"".join(
        shmq_msg(h, d) for h, d in msgs * 2) + shmq_msg(8, 5000, True) + \
        b"".join(shmq_msg(h, d) for h, d in msgs * 2)
    yield "pad-short-of-end", head + shmq_raw(1, 1, 3, 8, 10, 10, 1) + \
        shmq_raw(20, 2, 0, 0, 0, 0, 20)
    yield "one-line", head + shmq_raw(payload=bytes(48))
    yield "two-entries", head + shmq_raw(2, 1, 1, 8, 100, 150, 2) + \
        shmq_raw(1, 1, 2, 0, 50, 0, 1)
    yield "pad", head + shmq_raw(64, 2, 0, 0, 0, 0, 32)
    yield "lines-too-many", head + shmq_raw(40, 1, 3, 8, 2000, 2000, 32)
    yield "continuation-alone", head + shmq_raw(1, 1, 2, 0, 10, 0, 1)
    yield "header-past-total", head + shmq_raw(1, 1, 3, 30, 18, 18, 1)
    yield "huge-total", head + shmq_raw(1, 1, 1, 8, 40, 0xffffffff, 1)
    # references (version 3): round trips alone and in batches of up to
    # 16, then as a hostile producer writes them
    yield "ref-round-trip", head + b"".join(
        shmq_ref_msg(h, d) for h, d in [(8, 9000), (8, 1), (30, 20000)] * 3)
    yield "ref-batch", head + b"".join(
        shmq_ref_msg(8, 8192, True) for _ in range(20)) + shmq_msg(8, 10)
    yield "ref-mixed", head + shmq_ref_msg(8, 100, True) + \
        shmq_msg(8, 10) + shmq_ref_msg(8, 200, True) + shmq_msg(8, 3000)
    yield "ref-raw-inside", head + shmq_raw_ref(offset=64, length=4096)
    yield "ref-raw-batch", head + b"".join(
        shmq_raw_ref(offset=64 * i, length=1000) for i in range(18))
    yield "ref-raw-zero", head + shmq_raw_ref(length=0)
    yield "ref-raw-huge", head + shmq_raw_ref(length=(128 << 10) + 1)
    yield "ref-raw-before", head + shmq_raw_ref(offset=-(1 << 31))
    yield "ref-raw-unmapped", head + shmq_raw_ref(addr=0x10)
    yield "ref-raw-kernel", head + shmq_raw_ref(addr=0xffffffff00000000)
    yield "ref-raw-not-first", head + shmq_raw_ref(damage=1)
    yield "ref-raw-not-last", head + shmq_raw_ref(damage=2)
    yield "ref-raw-total", head + shmq_raw_ref(damage=4)
    yield "ref-raw-lines", head + shmq_raw_ref(damage=8)
    yield "ref-refused", u8(0) + u8(31) + u8(63) + u8(4) + \
        shmq_raw_ref(offset=64, length=100)
    yield "ref-batch-then-bad", head + b"".join(
        shmq_raw_ref(offset=64 * i, length=1000) for i in range(5)) + \
        shmq_raw_ref(addr=0x10) + shmq_raw_ref(offset=0, length=10)


# ---- OpenSHMEM's HELP (openshmem/shmem_help_wire.h) ----
def help_msg(seq=1, chunk=32768, put=1, dst_seg=0, src_seg=0, reserved=0,
             dst_off=0, src_off=0, nbytes=262144):
    return struct.pack("<IIBBB5sQQQ", seq, chunk, put, dst_seg, src_seg,
                       bytes([reserved] * 5), dst_off, src_off, nbytes)


def help_input(msg, n=4, me=1, pe=0, heap=128 << 20, data=1 << 20, dlen=0):
    return u8(n) + u8(me) + u8(pe) + u32(heap) + u32(data) + u8(dlen) + msg


def shmem_help_seeds():
    yield "put", help_input(help_msg())
    yield "get", help_input(help_msg(put=0, dst_seg=1, src_seg=0,
                                     nbytes=1 << 20))
    yield "last-chunk", help_input(help_msg(chunk=100000, nbytes=262145,
                                            dst_off=(128 << 20) - 262145))
    yield "heap-end", help_input(help_msg(dst_off=128 << 20, nbytes=0))
    yield "past-end", help_input(help_msg(dst_off=(128 << 20) - 100))
    yield "wrap", help_input(help_msg(src_off=2**64 - 64, nbytes=128))
    yield "segment", help_input(help_msg(dst_seg=2))
    yield "chunk-small", help_input(help_msg(chunk=63))
    yield "chunk-huge", help_input(help_msg(chunk=2**32 - 1))
    yield "reserved", help_input(help_msg(reserved=1))
    yield "self", help_input(help_msg(), me=0, pe=0)
    yield "stranger", help_input(help_msg(), n=4, pe=7)
    yield "data", help_input(help_msg(), dlen=3)
    yield "short", help_input(help_msg()[:39])


TARGETS = {
    "am": am_seeds, "rndv": rndv_seeds, "rndv_chunk": rndv_chunk_seeds,
    "rndv_write": rndv_write_seeds, "rma": rma_seeds, "sends": sends_seeds,
    "memregion": memregion_seeds,
    "bp": bp_seeds, "bp_state": bp_state_seeds, "coll": coll_seeds, "svd": svd_seeds,
    "coll_shm": cshm_seeds,
    "shmb": shmb_seeds, "config": config_seeds,
    "bootstrap": bootstrap_seeds, "pamirun": pamirun_seeds,
    "profile": profile_seeds, "shmq": shmq_seeds,
    "shmem_help": shmem_help_seeds,
}


def main():
    for target, seeds in TARGETS.items():
        d = os.path.join(OUT, target)
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            if name.startswith("seed-"):
                os.remove(os.path.join(d, name))
        for name, data in seeds():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
