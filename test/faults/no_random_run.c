/*
 * One task of the job has no random bytes for its region secret
 * (no_random.c, preloaded): client creation must fail with PAMI_ERROR on
 * every task, at once, instead of leaving the others waiting in the task
 * exchange for a card that never comes (or failing them with another
 * code when that task leaves).
 */
#include <stdio.h>

#include <pami.h>

int main(void)
{
    pami_client_t client;
    pami_result_t rc = pami_client_create("no_random", NULL, &client);
    if (rc == PAMI_SUCCESS) {
        pami_client_destroy(&client);
        fprintf(stderr, "no_random_run: client created, expected "
                        "PAMI_ERROR\n");
        return 1;
    }
    if (rc != PAMI_ERROR) {
        fprintf(stderr, "no_random_run: %s, expected PAMI_ERROR\n",
                pami_error_text(rc));
        return 1;
    }
    printf("no_random_run: PAMI_ERROR as expected\n");
    return 0;
}
