/* The README example: every task greets the next one. Build it outside the
 * tree with: cc hello.c $(pkg-config --cflags --libs pami) */
#include <pami.h>
#include <stdio.h>

static int greeted;

static void on_hello(pami_context_t ctx, void *cookie, const void *header,
                     size_t header_size, const void *data, size_t data_size,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)header; (void)header_size; (void)recv;
    pami_task_t from;
    pami_endpoint_query(origin, &from, NULL);
    printf("got '%.*s' from task %u\n", (int)data_size, (const char *)data, from);
    greeted = 1;
}

int main(void)
{
    pami_client_t client;
    pami_context_t ctx;
    pami_client_attr_t attr = {.field_mask = PAMI_CLIENT_ATTR_TASK | PAMI_CLIENT_ATTR_SIZE};
    if (pami_client_create("hello", NULL, &client) != PAMI_SUCCESS ||
        pami_client_query(client, &attr) != PAMI_SUCCESS ||
        pami_context_createv(client, NULL, 1, &ctx) != PAMI_SUCCESS)
        return 1;
    pami_dispatch_set(ctx, 7, on_hello, NULL, NULL);
    pami_dispatch_fence(client); /* every task registered before anyone sends */

    pami_endpoint_t next;
    pami_endpoint_create(client, (attr.task + 1) % attr.size, 0, &next);
    pami_send_immediate_t msg = {.dest = next, .dispatch = 7, .data = "hello", .data_len = 5};
    while (pami_send_immediate(ctx, &msg) == PAMI_EAGAIN)
        pami_context_advance(ctx, 1);
    while (!greeted)
        pami_context_wait(ctx, -1);

    pami_client_destroy(&client);
    return 0;
}
