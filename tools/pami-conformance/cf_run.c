/*
 * One case on this rank: start the case process, serve its exchanges over
 * the runners' channel, kill it at the deadline, then share the result
 * with the other ranks.
 */
#include "cf_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cf_leftovers.h"
#include "fdio.h"

#define CF_RESULT_STEP UINT32_MAX
#define CF_GONE_STEP   (UINT32_MAX - 1) /* the rank's case process ended */

typedef struct {
    pid_t    pid;
    int      to_child, from_child;
    uint8_t *in;          /* bytes read from the child, not yet parsed */
    size_t   in_len, in_cap;
    int      eof;
    uint32_t step;        /* exchanges the child started */
    int      in_exchange; /* waiting for step-1 to complete */
    uint32_t ex_len;
    int      have_result;
    cf_result_msg_t result;
    char     job[CF_JOB_KEY_LEN]; /* the case's job key, once reported */
} child_t;

static pid_t spawn(const cf_run_args_t *a, pami_task_t rank, size_t size,
                   int *to_child, int *from_child)
{
    int down[2], up[2];
    if (pipe(down) != 0)
        return -1;
    if (pipe(up) != 0) {
        close(down[0]);
        close(down[1]);
        return -1;
    }
    char rank_s[16], size_s[24], seed_s[24], to_s[32];
    snprintf(rank_s, sizeof(rank_s), "%u", rank);
    snprintf(size_s, sizeof(size_s), "%zu", size);
    snprintf(seed_s, sizeof(seed_s), "%llu", (unsigned long long)a->seed);
    snprintf(to_s, sizeof(to_s), "%.3f", a->timeout);
    pid_t pid = fork();
    if (pid == 0) {
        /* fds 3 and 4 as cf_child.h says; the rest closes at exec. */
        int r = dup(down[0]), w = dup(up[1]);
        if (r < 0 || w < 0 || dup2(r, CF_FD_FROM_RUNNER) < 0 ||
            dup2(w, CF_FD_TO_RUNNER) < 0)
            _exit(127);
        const char *argv[16];
        int n = 0;
        argv[n++] = a->self;
        argv[n++] = "--case-process";
        argv[n++] = a->case_id;
        argv[n++] = rank_s;
        argv[n++] = size_s;
        argv[n++] = seed_s;
        argv[n++] = to_s;
        argv[n++] = a->plugin ? a->plugin : "";
        argv[n] = NULL;
        execv("/proc/self/exe", (char *const *)argv);
        execv(a->self, (char *const *)argv);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    if (pid < 0) {
        close(down[1]);
        close(up[0]);
        return -1;
    }
    fcntl(down[1], F_SETFD, FD_CLOEXEC);
    fcntl(up[0], F_SETFD, FD_CLOEXEC);
    fcntl(up[0], F_SETFL, O_NONBLOCK);
    *to_child = down[1];
    *from_child = up[0];
    return pid;
}

static void read_child(child_t *c)
{
    for (;;) {
        if (c->in_cap - c->in_len < 65536) {
            size_t cap = c->in_cap ? 2 * c->in_cap : 131072;
            uint8_t *n = realloc(c->in, cap);
            if (n == NULL)
                return;
            c->in = n;
            c->in_cap = cap;
        }
        ssize_t n = read(c->from_child, c->in + c->in_len,
                         c->in_cap - c->in_len);
        if (n > 0) {
            c->in_len += (size_t)n;
            continue;
        }
        if (n == 0)
            c->eof = 1;
        else if (errno == EINTR)
            continue;
        return;
    }
}

/* Handles whole messages from the child: starts exchanges, keeps the
 * result. -1 for a message the protocol does not have. */
static int parse_child(cf_channel_t *ch, const cf_run_args_t *a, child_t *c)
{
    size_t off = 0;
    int rc = 0;
    while (!c->in_exchange && c->in_len - off >= sizeof(cf_msg_hdr_t)) {
        cf_msg_hdr_t h;
        memcpy(&h, c->in + off, sizeof(h));
        if (h.len > CF_MSG_MAX) {
            rc = -1;
            break;
        }
        if (c->in_len - off - sizeof(h) < h.len)
            break;
        const uint8_t *body = c->in + off + sizeof(h);
        off += sizeof(h) + h.len;
        if (h.type == CF_MSG_ALLGATHER) {
            if (cf_channel_put(ch, a->run, c->step, body, h.len) != 0) {
                rc = -1;
                break;
            }
            c->step++;
            c->in_exchange = 1;
            c->ex_len = h.len;
        } else if (h.type == CF_MSG_RESULT && h.len == sizeof(c->result)) {
            memcpy(&c->result, body, sizeof(c->result));
            c->result.msg[sizeof(c->result.msg) - 1] = '\0';
            c->have_result = 1;
        } else if (h.type == CF_MSG_JOB && h.len == sizeof(c->job)) {
            memcpy(c->job, body, sizeof(c->job));
            c->job[sizeof(c->job) - 1] = '\0';
        } else {
            rc = -1;
            break;
        }
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    return rc;
}

static void end_child(child_t *c, int kill_it, int *wstatus)
{
    if (kill_it)
        kill(c->pid, SIGKILL);
    while (waitpid(c->pid, wstatus, 0) < 0 && errno == EINTR)
        ;
    close(c->to_child);
    close(c->from_child);
    free(c->in);
}

/* This rank's part of the case. */
static void run_here(cf_channel_t *ch, const cf_run_args_t *a,
                     cf_result_msg_t *res, char job[CF_JOB_KEY_LEN])
{
    size_t size = cf_channel_size(ch);
    child_t c = {0};
    memset(res, 0, sizeof(*res));
    c.pid = spawn(a, cf_channel_rank(ch), size, &c.to_child, &c.from_child);
    if (c.pid < 0) {
        res->status = CF_CRASHED;
        snprintf(res->msg, sizeof(res->msg),
                 "task %u: could not start the case process: %s",
                 cf_channel_rank(ch), strerror(errno));
        return;
    }
    double deadline = cf_now() + a->timeout;
    uint8_t *gathered = NULL;
    int bad = 0, wstatus = 0, exited = 0;
    while (!c.eof && !bad) {
        if (cf_now() > deadline)
            break;
        struct pollfd pf = {.fd = c.from_child, .events = POLLIN};
        poll(&pf, 1, c.in_exchange ? 0 : 5);
        read_child(&c);
        if (parse_child(ch, a, &c) != 0)
            bad = 1;
        if (c.in_exchange) {
            uint8_t *g = realloc(gathered, size * c.ex_len + 1);
            if (g == NULL) {
                bad = 1;
                break;
            }
            gathered = g;
            int t = cf_channel_take(ch, a->run, c.step - 1, gathered,
                                    c.ex_len);
            if (t < 0) {
                /* The ranks' case processes diverged (one is in another
                 * exchange): fail this one, let the process report. */
                cf_reply_hdr_t diverged = {2};
                c.in_exchange = 0;
                if (pami_fd_write_all(c.to_child, &diverged,
                                      sizeof(diverged)) != 0)
                    c.eof = 1;
                continue;
            } else if (t > 0) {
                c.in_exchange = 0;
                cf_reply_hdr_t ok = {0};
                if (pami_fd_write_all(c.to_child, &ok, sizeof(ok)) != 0 ||
                    pami_fd_write_all(c.to_child, gathered,
                                      size * c.ex_len) != 0)
                    c.eof = 1; /* the child is gone; waitpid says how */
                continue;
            } else {
                /* A rank whose case process ended without its part: the
                 * exchange fails here at once instead of at the deadline. */
                for (pami_task_t r = 0; r < size; r++)
                    if (cf_channel_has(ch, a->run, CF_GONE_STEP, r) &&
                        !cf_channel_has(ch, a->run, c.step - 1, r)) {
                        cf_reply_hdr_t gone = {1};
                        c.in_exchange = 0;
                        if (pami_fd_write_all(c.to_child, &gone,
                                              sizeof(gone)) != 0)
                            c.eof = 1;
                        break;
                    }
                if (!c.in_exchange)
                    continue;
            }
        }
        cf_channel_wait(ch, 5);
    }
    free(gathered);
    uint8_t none = 0;
    cf_channel_put(ch, a->run, CF_GONE_STEP, &none, 1);
    int timed_out = !c.eof && !bad;
    end_child(&c, !c.eof || bad, &wstatus);
    memcpy(job, c.job, CF_JOB_KEY_LEN);
    exited = WIFEXITED(wstatus);
    if (timed_out) {
        res->status = CF_TIMEOUT;
        snprintf(res->msg, sizeof(res->msg),
                 "task %u: no result within %.0f s (%s exchange %u)",
                 cf_channel_rank(ch), a->timeout,
                 c.in_exchange ? "waiting in" : "after", c.step);
    } else if (bad) {
        res->status = CF_CRASHED;
        snprintf(res->msg, sizeof(res->msg),
                 "task %u: the case process broke the runner's protocol",
                 cf_channel_rank(ch));
    } else if (c.have_result) {
        *res = c.result;
        /* A result, then a non-zero exit: a sanitizer's report at exit,
         * or the process broke after the case. */
        if (res->status == CF_PASSED && !(exited &&
                                          WEXITSTATUS(wstatus) == 0)) {
            res->status = CF_CRASHED;
            if (exited)
                snprintf(res->msg, sizeof(res->msg),
                         "task %u: expected a clean exit after the case "
                         "passed, seen exit code %d (see stderr)",
                         cf_channel_rank(ch), WEXITSTATUS(wstatus));
            else
                snprintf(res->msg, sizeof(res->msg),
                         "task %u: expected a clean exit after the case "
                         "passed, seen signal %d (%s)", cf_channel_rank(ch),
                         WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
        }
    } else {
        res->status = CF_CRASHED;
        if (exited)
            snprintf(res->msg, sizeof(res->msg),
                     "task %u: expected a result, seen the case process "
                     "exit with %d", cf_channel_rank(ch),
                     WEXITSTATUS(wstatus));
        else
            snprintf(res->msg, sizeof(res->msg),
                     "task %u: expected a result, seen the case process "
                     "killed by signal %d (%s)", cf_channel_rank(ch),
                     WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
    }
}

int cf_run_case(cf_channel_t *ch, const cf_run_args_t *a,
                cf_result_msg_t *all)
{
    cf_channel_new_run(ch, a->run);
    cf_result_msg_t mine;
    char job[CF_JOB_KEY_LEN] = "";
    run_here(ch, a, &mine, job);
    int rc = -1;
    if (cf_channel_put(ch, a->run, CF_RESULT_STEP, &mine, sizeof(mine)) == 0) {
        /* Every rank's runner reaches this within its own case deadline. */
        double deadline = cf_now() + a->timeout + 120;
        for (;;) {
            int t = cf_channel_take(ch, a->run, CF_RESULT_STEP, all,
                                    sizeof(*all));
            if (t != 0) {
                rc = t > 0 ? 0 : -1;
                break;
            }
            if (cf_now() > deadline)
                break;
            cf_channel_wait(ch, 50);
        }
    }
    /* Every rank put its result after reaping its case process, so no
     * process of the job is left to use a name (when the gathering
     * failed the job is broken and nothing runs after). */
    cf_leftovers_remove(job);
    return rc;
}
