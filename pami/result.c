#include <errno.h>

#include "internal.h"

static const char *const result_text[] = {
#define PAMI_RESULT_TEXT_(name, value, text) [value] = text,
    PAMI_FOREACH_RESULT(PAMI_RESULT_TEXT_)
#undef PAMI_RESULT_TEXT_
};

const char *pami_error_text(pami_result_t result)
{
    if ((unsigned)result >= sizeof(result_text) / sizeof(result_text[0]) ||
        result_text[result] == NULL)
        return "unknown result";
    return result_text[result];
}

pami_result_t pami_result_from_errno(int rc)
{
    switch (rc) {
    case 0:           return PAMI_SUCCESS;
    case -EAGAIN:     return PAMI_EAGAIN;
    case -ENOMEM:     return PAMI_ENOMEM;
    case -EINVAL:     return PAMI_INVAL;
    case -ETIMEDOUT:  return PAMI_TIMEOUT;
    case -ECONNRESET: return PAMI_PEER_FAILED;
    case -ECANCELED:  return PAMI_SHUTDOWN;
    case -ENOTSUP:    return PAMI_UNIMPL;
    default:          return PAMI_TRANSPORT;
    }
}
