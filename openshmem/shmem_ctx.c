/* Communication contexts. Each is its own count of operations in flight
 * over the library's one pami context (pami makes contexts collectively,
 * at init only): quiet on a context waits for its own operations, then
 * for pami's fence of the whole pami context. */
#include <stdlib.h>

#include "shmem_coll.h"
#include "shmem_internal.h"

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    struct shmemi_ctx *c;

    shmemi_require_init("shmem_ctx_create");
    if (ctx == NULL)
        return -1;
    *ctx = SHMEM_CTX_INVALID;
    /* SHMEM_TEAM_SHARED is filled by the first team call: this may be it. */
    if (team == SHMEM_TEAM_INVALID || shmemi_team_init() != 0 ||
        team->my_pe < 0)
        return -1;
    if (options & ~(SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE |
                    SHMEM_CTX_NOSTORE))
        return -1;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return -1;
    c->context = shmemi.context;
    c->options = options;
    c->team = team;
    __atomic_fetch_add(&team->contexts, 1, __ATOMIC_RELAXED);
    *ctx = c;
    return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    if (ctx == SHMEM_CTX_INVALID)
        return;
    if (ctx == SHMEM_CTX_DEFAULT) {
        shmemi_warn("shmem_ctx_destroy(SHMEM_CTX_DEFAULT): ignored");
        return;
    }
    /* Its operations complete first, as the specification says. */
    shmemi_ctx_quiet(ctx);
    __atomic_fetch_sub(&ctx->team->contexts, 1, __ATOMIC_RELAXED);
    free(ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    if (team == NULL)
        return -1;
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return -1;
    }
    *team = ctx->team;
    return 0;
}
