/*
 * Process identity cards (proc_card.h), read from /proc.
 */
#include "proc_card.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The boot id separates containers that share a hostname. */
static void host_id(char out[PROC_CARD_HOST_LEN])
{
    memset(out, 0, PROC_CARD_HOST_LEN);
    gethostname(out, PROC_CARD_HOST_LEN / 2 - 1);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f == NULL)
        return;
    size_t used = strnlen(out, PROC_CARD_HOST_LEN / 2);
    out[used++] = '/';
    if (fgets(out + used, (int)(PROC_CARD_HOST_LEN - used), f) == NULL)
        out[used] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

/* State letter and start time of pid; -ENOENT when there is no such
 * process, -EIO when /proc says something unexpected. */
static int read_stat(uint64_t pid, char *state, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%llu/stat", (unsigned long long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return errno == ENOENT || errno == ESRCH ? -ENOENT : -EIO;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and ')': fields start after the
     * last ')'. Then: state (field 3) ... starttime (field 22). */
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ')
        return -EIO;
    p += 2;
    *state = *p;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (p == NULL)
            return -EIO;
        p++;
    }
    unsigned long long v;
    if (sscanf(p, "%llu", &v) != 1)
        return -EIO;
    *start = v;
    return 0;
}

int proc_card_self(proc_card_t *card)
{
    char state;
    memset(card, 0, sizeof(*card));
    host_id(card->host);
    card->pid = (uint64_t)getpid();
    return read_stat(card->pid, &state, &card->start);
}

bool proc_card_dead(const proc_card_t *card)
{
    char here[PROC_CARD_HOST_LEN];
    host_id(here);
    if (card->pid == 0 || memcmp(here, card->host, sizeof(here)) != 0)
        return false;
    char     state;
    uint64_t start;
    int rc = read_stat(card->pid, &state, &start);
    if (rc == -ENOENT)
        return true;
    if (rc != 0)
        return false;
    return state == 'Z' || state == 'X' || start != card->start;
}

bool proc_card_stopped(const proc_card_t *card)
{
    char here[PROC_CARD_HOST_LEN];
    host_id(here);
    if (card->pid == 0 || memcmp(here, card->host, sizeof(here)) != 0)
        return false;
    char     state;
    uint64_t start;
    return read_stat(card->pid, &state, &start) == 0 &&
           start == card->start && state == 'T';
}
