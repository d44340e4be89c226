/*
 * The ranks' lives: fork and exec with the bootstrap environment, reap
 * them (ev_child), and end the job on the first failure, the timeout or a
 * signal to pamirun: SIGTERM to every rank's process group, SIGKILL to
 * what is left after a grace period.
 */
#include "pamirun.h"

#include "bootstrap.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the child ---------------------------------------------------------- */

/* Undoes what pamirun changed for itself: ignored dispositions and the
 * signal mask survive exec, and a rank must see the defaults. */
static void child_reset_signals(void)
{
    static const int sigs[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD};
    sigset_t         none;

    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        signal(sigs[i], SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Whether path has the shape of PAMI_JOB_DIR_FMT: some job's directory. */
static int is_job_dir(const char *path)
{
    const char *fmt = PAMI_JOB_DIR_FMT;
    const char *hole = strstr(fmt, "%s");
    size_t      pre = (size_t)(hole - fmt), suf = strlen(hole + 2);
    size_t      len = strlen(path);

    return len > pre + suf && strncmp(path, fmt, pre) == 0 &&
           strcmp(path + len - suf, hole + 2) == 0;
}

/* The user's own UCX_POSIX_DIR wins, except one an enclosing pamirun
 * set for its job: this job's ranks get this job's directory. */
static int child_set_ucx_dir(const pamirun_job_t *job)
{
    const char *cur = getenv("UCX_POSIX_DIR");

    if (job->ucx_dir[0] == '\0' || (cur != NULL && !is_job_dir(cur)))
        return 0;
    return setenv("UCX_POSIX_DIR", job->ucx_dir, 1);
}

static int child_set_env(const pamirun_job_t *job, uint32_t rank)
{
    char rank_s[16], size_s[16];

    snprintf(rank_s, sizeof(rank_s), "%u", rank);
    snprintf(size_s, sizeof(size_s), "%u", job->size);
    /* Unset without --tag-output: a pamirun started by a tagged rank
     * must not pass the word on. */
    return setenv(PAMIRUN_ENV_SOCKET, job->sock_path, 1) |
           setenv(PAMIRUN_ENV_RANK, rank_s, 1) |
           setenv(PAMIRUN_ENV_SIZE, size_s, 1) |
           setenv(PAMIRUN_ENV_JOBID, job->job_id, 1) |
           child_set_ucx_dir(job) |
           (job->tag_output ? setenv(PAMIRUN_ENV_TAGGED, "1", 1)
                            : unsetenv(PAMIRUN_ENV_TAGGED));
}

/* Runs in the forked child; never returns. pamirun is single-threaded,
 * so the child may use ordinary library calls before exec. */
static void child_exec(const pamirun_job_t *job, uint32_t rank, pid_t parent,
                       int out_fd, int err_fd)
{
    /* Its own process group, so a kill reaches the rank's children too. */
    setpgid(0, 0);
    /* Should pamirun die without cleaning up, its ranks die with it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(PAMIRUN_EXIT_INTERNAL);
    child_reset_signals();

    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 ||
        dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0) {
        dprintf(err_fd, "pamirun: rank %u: cannot set up stdio: %s\n", rank,
                strerror(errno));
        _exit(PAMIRUN_EXIT_INTERNAL);
    }
    /* The originals are close-on-exec; the dup2 copies are not. */
    if (child_set_env(job, rank) != 0) {
        dprintf(STDERR_FILENO, "pamirun: rank %u: cannot set environment\n",
                rank);
        _exit(PAMIRUN_EXIT_INTERNAL);
    }
    /* Only now: until exec closes them, the child holds pamirun's
     * descriptors, which may lie above the original limit. */
    if (job->nofile_raised)
        setrlimit(RLIMIT_NOFILE, &job->saved_nofile);
    execvp(job->argv[0], job->argv);
    int err = errno;
    dprintf(STDERR_FILENO, "pamirun: cannot execute '%s': %s\n", job->argv[0],
            strerror(err));
    /* The shell's convention: 127 not found, 126 found but not runnable. */
    _exit(err == ENOENT || err == ENOTDIR ? 127 : 126);
}

/* ---- killing ------------------------------------------------------------ */

static void kill_rank(pamirun_rank_t *r, int sig)
{
    if (r->pid <= 0)
        return;
    /* The group may not exist yet if the child has not run setpgid. */
    if (kill(-r->pid, sig) != 0)
        kill(r->pid, sig);
}

static void kill_all(pamirun_job_t *job, int sig)
{
    for (uint32_t i = 0; i < job->size; i++)
        kill_rank(&job->ranks[i], sig);
}

static void grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    pamirun_job_t *job = w->data;

    pami_debug(PAMIRUN_SUBSYS, "grace over, killing %u ranks with SIGKILL",
               job->running);
    kill_all(job, SIGKILL);
}

void job_abort(pamirun_job_t *job, int code)
{
    if (job->exit_code < 0)
        job->exit_code = code;
    if (job->aborting)
        return;
    job->aborting = 1;
    ev_timer_stop(job->loop, &job->timeout_timer);
    if (job->running == 0)
        return;
    kill_all(job, SIGTERM);
    ev_timer_init(&job->grace_timer, grace_cb, PAMIRUN_GRACE_SEC, 0.);
    job->grace_timer.data = job;
    ev_timer_start(job->loop, &job->grace_timer);
}

/* ---- reaping ------------------------------------------------------------ */

static void report_failure(const pamirun_rank_t *r, int status)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        fprintf(stderr, "pamirun: rank %u killed by signal %d (%s)\n",
                r->rank, sig, strsignal(sig));
    } else {
        fprintf(stderr, "pamirun: rank %u exited with code %d\n", r->rank,
                WEXITSTATUS(status));
    }
}

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
    (void)revents;
    pamirun_job_t  *job    = ev_userdata(loop);
    pamirun_rank_t *r      = w->data;
    int             status = w->rstatus;

    ev_child_stop(loop, w);
    r->pid = 0;
    job->running--;
    /* Its last words come before the verdict on it. */
    output_finish(job, r);
    server_rank_gone(job->server, r->rank);

    int failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pami_debug(PAMIRUN_SUBSYS, "rank %u ended with status 0x%x, %u still "
               "running", r->rank, status, job->running);
    if (failed && !job->aborting) {
        report_failure(r, status);
        job_abort(job, WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                           : WEXITSTATUS(status));
    }
    if (job->running == 0)
        ev_break(loop, EVBREAK_ALL);
}

static int spawn_one(pamirun_job_t *job, pamirun_rank_t *r)
{
    int out[2], err[2];

    if (pipe2(out, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        return -1;
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid    = fork();
    if (pid == 0)
        child_exec(job, r->rank, parent, out[1], err[1]);
    int fork_errno = errno;
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        close(out[0]);
        close(err[0]);
        errno = fork_errno;
        return -1;
    }
    /* Also here, so that a kill right after fork reaches the group. */
    setpgid(pid, pid);
    r->pid = pid;
    sysv_note_pid(job, pid);
    job->running++;
    ev_child_init(&r->child, child_cb, pid, 0);
    r->child.data = r;
    ev_child_start(job->loop, &r->child);
    output_start(job, r, out[0], err[0]);
    return 0;
}

int spawn_ranks(pamirun_job_t *job)
{
    for (uint32_t i = 0; i < job->size; i++) {
        job->ranks[i].rank = i;
        job->ranks[i].out.fd = job->ranks[i].err.fd = -1;
    }
    for (uint32_t i = 0; i < job->size; i++) {
        if (spawn_one(job, &job->ranks[i]) != 0) {
            fprintf(stderr, "pamirun: cannot start rank %u: %s\n", i,
                    strerror(errno));
            /* The ranks that never started cannot take part either. */
            for (uint32_t j = i; j < job->size; j++)
                server_rank_gone(job->server, j);
            job_abort(job, PAMIRUN_EXIT_INTERNAL);
            return -1;
        }
    }
    return 0;
}

/* ---- timeout and signals ------------------------------------------------ */

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    pamirun_job_t *job = w->data;

    fprintf(stderr, "pamirun: job exceeded its timeout of %g s, killing %u "
            "running ranks\n", job->timeout, job->running);
    job_abort(job, PAMIRUN_EXIT_TIMEOUT);
}

void job_start_timeout(pamirun_job_t *job)
{
    if (job->timeout <= 0 || job->aborting)
        return;
    ev_timer_init(&job->timeout_timer, timeout_cb, job->timeout, 0.);
    job->timeout_timer.data = job;
    ev_timer_start(job->loop, &job->timeout_timer);
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)revents;
    pamirun_job_t *job = w->data;

    if (job->aborting) {
        /* Asked twice: the user does not want to wait for the grace. */
        kill_all(job, SIGKILL);
        return;
    }
    fprintf(stderr, "pamirun: got %s, killing %u running ranks\n",
            strsignal(w->signum), job->running);
    job_abort(job, 128 + w->signum);
}

void job_watch_signals(pamirun_job_t *job)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};

    _Static_assert(sizeof(sigs) / sizeof(sigs[0]) ==
                   sizeof(job->signals) / sizeof(job->signals[0]),
                   "one watcher per signal");
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        ev_signal_init(&job->signals[i], signal_cb, sigs[i]);
        job->signals[i].data = job;
        ev_signal_start(job->loop, &job->signals[i]);
    }
    /* Writes to a closed socket or stdout must fail, not kill us. */
    signal(SIGPIPE, SIG_IGN);
}

void job_stop_watchers(pamirun_job_t *job)
{
    ev_timer_stop(job->loop, &job->timeout_timer);
    ev_timer_stop(job->loop, &job->grace_timer);
    for (size_t i = 0; i < sizeof(job->signals) / sizeof(job->signals[0]); i++)
        ev_signal_stop(job->loop, &job->signals[i]);
}
