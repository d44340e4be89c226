/*
 * For conformance tests (installed with the other public headers, see
 * docs/abi.md). Tests that check how a protocol handles forged or
 * malformed packets must put packets on the protocol's ids, which the
 * program's pami_send* refuse (dispatch_max and up) and
 * pami_protocol_send* keep to the sending protocol's own block.
 */
#ifndef PAMI_TEST_H
#define PAMI_TEST_H

#include "pami.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pami_send_immediate on any id of the wire (docs/protocols/am.md,
 * "Dispatch ids"): the program's, the protocols' given out, and the
 * core's (512 and up, sent without the ACK flag); with the same checks
 * otherwise: a test's stand-in for a peer that forges packets. The
 * wrapper passes sizeof(*params), as pami_send_immediate does. */
PAMI_EXPORT
pami_result_t pami_test_send_raw_sized(pami_context_t context,
                                       const pami_send_immediate_t *params,
                                       size_t params_size);
static inline pami_result_t
pami_test_send_raw(pami_context_t context, const pami_send_immediate_t *params)
{
    return pami_test_send_raw_sized(context, params, sizeof(*params));
}

/* pami_send on any id of the wire, as pami_test_send_raw: a message with
 * a remote_fn carries the ACK flag and its cookie, as pami_send's do, so
 * a forged request that the target answers (a rendezvous RTS on 515 is
 * refused with an ACK) reaches remote_fn with the target's answer. */
PAMI_EXPORT
pami_result_t pami_test_send_raw_msg_sized(pami_context_t context,
                                           const pami_send_t *params,
                                           size_t params_size);
static inline pami_result_t pami_test_send_raw_msg(pami_context_t context,
                                                   const pami_send_t *params)
{
    return pami_test_send_raw_msg_sized(context, params, sizeof(*params));
}

#ifdef __cplusplus
}
#endif

#endif /* PAMI_TEST_H */
