/* The runners' channel over pami active messages (see cf_channel.h). */
#include "cf_channel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CF_CHANNEL_ID 0

typedef struct {
    uint32_t run, step, origin;
} part_hdr_t;

typedef struct part {
    struct part *next;
    part_hdr_t   h;
    size_t       len;
    int          here;   /* all bytes arrived */
    uint8_t     *data;
} part_t;

struct cf_channel {
    pami_client_t  client;
    pami_context_t ctx;
    pami_task_t    rank;
    size_t         size;
    part_t        *parts;
};

static part_t *add_part(cf_channel_t *ch, const part_hdr_t *h, size_t len)
{
    part_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->h = *h;
    p->len = len;
    p->data = malloc(len ? len : 1);
    if (p->data == NULL) {
        free(p);
        return NULL;
    }
    p->next = ch->parts;
    ch->parts = p;
    return p;
}

static void part_arrived(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    part_t *p = cookie;
    if (rc == PAMI_SUCCESS)
        p->here = 1;
}

static void on_part(pami_context_t ctx, void *cookie, const void *header,
                    size_t header_size, const void *data, size_t data_size,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)origin;
    cf_channel_t *ch = cookie;
    part_hdr_t h;
    if (header_size != sizeof(h)) {
        fprintf(stderr, "pami-conformance: dropped a channel message with "
                "a header of %zu bytes\n", header_size);
        return;
    }
    memcpy(&h, header, sizeof(h));
    part_t *p = add_part(ch, &h, data_size);
    if (p == NULL)
        return;
    if (data != NULL || data_size == 0) {
        if (data_size > 0)
            memcpy(p->data, data, data_size);
        p->here = 1;
    } else {
        recv->addr = p->data;
        recv->local_fn = part_arrived;
        recv->cookie = p;
    }
}

cf_channel_t *cf_channel_open(void)
{
    cf_channel_t *ch = calloc(1, sizeof(*ch));
    if (ch == NULL)
        return NULL;
    /* No spinning: the runners mostly wait while the case processes work
     * on the same cores. */
    pami_client_params_t p = {.field_mask = PAMI_CLIENT_PARAM_WAIT_SPIN,
                              .wait_spin = 0};
    pami_result_t rc = pami_client_create("pami-conformance-runner", &p,
                                          &ch->client);
    if (rc != PAMI_SUCCESS) {
        fprintf(stderr, "pami-conformance: pami_client_create: %s\n",
                pami_error_text(rc));
        free(ch);
        return NULL;
    }
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_SIZE};
    pami_client_query(ch->client, &a);
    ch->rank = a.task;
    ch->size = a.size;
    if ((rc = pami_context_createv(ch->client, NULL, 1, &ch->ctx)) !=
            PAMI_SUCCESS ||
        (rc = pami_dispatch_set(ch->ctx, CF_CHANNEL_ID, on_part, ch, NULL)) !=
            PAMI_SUCCESS ||
        (rc = pami_dispatch_fence(ch->client)) != PAMI_SUCCESS) {
        fprintf(stderr, "pami-conformance: runner channel: %s\n",
                pami_error_text(rc));
        pami_client_destroy(&ch->client);
        free(ch);
        return NULL;
    }
    return ch;
}

void cf_channel_close(cf_channel_t *ch)
{
    if (ch == NULL)
        return;
    pami_context_destroyv(&ch->ctx, 1);
    pami_client_destroy(&ch->client);
    while (ch->parts != NULL) {
        part_t *p = ch->parts;
        ch->parts = p->next;
        free(p->data);
        free(p);
    }
    free(ch);
}

pami_task_t cf_channel_rank(const cf_channel_t *ch) { return ch->rank; }
size_t      cf_channel_size(const cf_channel_t *ch) { return ch->size; }

void cf_channel_new_run(cf_channel_t *ch, uint32_t run)
{
    part_t **pp = &ch->parts;
    while (*pp != NULL) {
        part_t *p = *pp;
        /* A part still arriving stays: its buffer is in use. */
        if (p->h.run < run && p->here) {
            *pp = p->next;
            free(p->data);
            free(p);
        } else {
            pp = &p->next;
        }
    }
}

static void sent(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)rc;
    free(cookie);
}

int cf_channel_put(cf_channel_t *ch, uint32_t run, uint32_t step,
                   const void *data, size_t len)
{
    part_hdr_t h = {run, step, ch->rank};
    part_t *own = add_part(ch, &h, len);
    if (own == NULL)
        return -1;
    memcpy(own->data, data, len);
    own->here = 1;
    for (size_t i = 1; i < ch->size; i++) {
        pami_task_t to = (pami_task_t)((ch->rank + i) % ch->size);
        pami_endpoint_t ep;
        void *copy = malloc(len ? len : 1);
        if (copy == NULL ||
            pami_endpoint_create(ch->client, to, 0, &ep) != PAMI_SUCCESS) {
            free(copy);
            return -1;
        }
        memcpy(copy, data, len);
        pami_send_t s = {.send = {.dest = ep, .dispatch = CF_CHANNEL_ID,
                                  .header = &h, .header_len = sizeof(h),
                                  .data = copy, .data_len = len},
                         .local_fn = sent, .cookie = copy};
        pami_result_t rc;
        while ((rc = pami_send(ch->ctx, &s)) == PAMI_EAGAIN)
            pami_context_wait(ch->ctx, 10);
        if (rc != PAMI_SUCCESS) {
            fprintf(stderr, "pami-conformance: runner channel send: %s\n",
                    pami_error_text(rc));
            free(copy);
            return -1;
        }
    }
    return 0;
}

int cf_channel_take(cf_channel_t *ch, uint32_t run, uint32_t step,
                    void *out, size_t len)
{
    size_t found = 0;
    for (part_t *p = ch->parts; p != NULL; p = p->next)
        if (p->h.run == run && p->h.step == step && p->here &&
            p->h.origin < ch->size) {
            if (p->len != len)
                return -1;
            found++;
        }
    if (found < ch->size)
        return 0;
    part_t **pp = &ch->parts;
    while (*pp != NULL) {
        part_t *p = *pp;
        if (p->h.run == run && p->h.step == step && p->here) {
            memcpy((uint8_t *)out + (size_t)p->h.origin * len, p->data, len);
            *pp = p->next;
            free(p->data);
            free(p);
        } else {
            pp = &p->next;
        }
    }
    return 1;
}

int cf_channel_has(const cf_channel_t *ch, uint32_t run, uint32_t step,
                   pami_task_t origin)
{
    for (const part_t *p = ch->parts; p != NULL; p = p->next)
        if (p->h.run == run && p->h.step == step && p->h.origin == origin &&
            p->here)
            return 1;
    return 0;
}

void cf_channel_wait(cf_channel_t *ch, int ms)
{
    pami_context_wait(ch->ctx, ms);
}
