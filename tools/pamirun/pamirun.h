/*
 * pamirun: starts N ranks of a program on this machine, serves the local
 * bootstrap to them, forwards their output line by line (with a rank
 * prefix under --tag-output), and turns
 * the first failure into the job's exit code. Everything runs from one
 * libev loop in one thread; nothing polls.
 *
 * Files: main.c (arguments, setup, exit), spawn.c (children, kills,
 * timeouts, signals), output.c (line forwarding), server.c (bootstrap
 * server), admit.c (who may connect to it, shedding the rest), stall.c
 * (stopped ranks in a collective), workdir.c (private directory, job id,
 * cleanup).
 */
#ifndef PAMI_TOOLS_PAMIRUN_H
#define PAMI_TOOLS_PAMIRUN_H

#include <ev.h>
#include <limits.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>

#define PAMIRUN_SUBSYS      "pamirun"
#define PAMIRUN_GRACE_SEC   2.0   /* SIGTERM, then SIGKILL after this */
#define PAMIRUN_LINE_MAX    8192  /* longer lines are forwarded in pieces */

/* Bootstrap connections from outside the job's process groups: at most
 * this many open at once, each closed unless it says HELLO in time. */
#define PAMIRUN_STRANGERS_MAX     16
#define PAMIRUN_HELLO_TIMEOUT     1.0   /* seconds */
#define PAMIRUN_ACCEPT_BATCH      32    /* accepts per loop pass */
#define PAMIRUN_ACCEPT_PAUSE      0.1   /* when accept fails for lack of
                                           memory or descriptors */
#define PAMIRUN_SHED_LOG_INTERVAL 10.0  /* at most one such line per */

/* Exit codes of pamirun itself (a failing rank's code wins otherwise). */
#define PAMIRUN_EXIT_INTERNAL 1
#define PAMIRUN_EXIT_USAGE    2
#define PAMIRUN_EXIT_TIMEOUT  124

typedef struct pamirun_job pamirun_job_t;
typedef struct pamirun_server pamirun_server_t;

/* One of a rank's output pipes. */
typedef struct {
    ev_io    io;
    int      fd;            /* read end; -1 once closed */
    int      out_fd;        /* where lines go: 1 or 2 */
    uint32_t rank;
    int      tag;           /* "[rank] " before each line */
    int      at_line_start; /* the next byte starts a new line */
    int      broken;        /* out_fd refused a write: nobody reads it */
    size_t   used;
    char     buf[PAMIRUN_LINE_MAX];
} pamirun_stream_t;

typedef struct {
    uint32_t         rank;
    pid_t            pid;     /* also its process group; 0 once reaped */
    ev_child         child;
    pamirun_stream_t out;
    pamirun_stream_t err;
} pamirun_rank_t;

struct pamirun_job {
    struct ev_loop   *loop;
    uint32_t          size;
    double            timeout;  /* seconds; 0 for none */
    int               tag_output; /* --tag-output: "[rank] " on each line */
    char *const      *argv;     /* program and its arguments */
    char              job_id[64];
    char              dir[PATH_MAX];
    /* /dev/shm/pami-<job id>-ucx, given to UCX as UCX_POSIX_DIR; empty
     * when it could not be made (UCX then keeps /dev/shm). */
    char              ucx_dir[128];
    char              sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    pamirun_rank_t   *ranks;
    uint32_t          running;  /* started and not yet reaped */
    int               exit_code;  /* of the first failure; -1 while none */
    int               aborting;
    ev_timer          timeout_timer;
    ev_timer          grace_timer;
    ev_signal         signals[3];
    pamirun_server_t *server;
    struct rlimit     saved_nofile;  /* what the ranks get back */
    int               nofile_raised;
    time_t            started;
    /* Every process of the job pamirun knew: ranks it started and
     * processes that joined the bootstrap (sysv.c). */
    pid_t            *pids;
    size_t            npids, pids_cap;
};

/* admit.c */
enum { ADMIT_RANK, ADMIT_STRANGER, ADMIT_OTHER_USER };
/* Whose connection fd is: a rank's process group, another process of
 * this user, or another user. */
int admit_classify(const pamirun_job_t *job, int fd);
/* A descriptor held back to accept-and-close with when none are left. */
int admit_spare_open(void);
/* Gives up *spare to accept and close one pending connection, then takes
 * it again; 0 when a connection was shed. */
int admit_shed_with_spare(int listen_fd, int *spare);
/* Rate-limited log of refused connections: one line at the first, then
 * at most one per PAMIRUN_SHED_LOG_INTERVAL with the count in between. */
typedef struct {
    double   last;
    uint64_t total, quiet, lines;
} admit_log_t;
void admit_note(admit_log_t *log, double now, const char *why);
/* At exit: the total, when some refusals were not logged one by one. */
void admit_log_end(const admit_log_t *log);

/* workdir.c */
void job_make_id(pamirun_job_t *job);
int  workdir_create(pamirun_job_t *job);
void workdir_remove(pamirun_job_t *job);

/* server.c: the bootstrap server on job->sock_path. */
int  server_start(pamirun_job_t *job);
/* The rank can no longer take part in collectives (it exited). */
void server_rank_gone(pamirun_server_t *srv, uint32_t rank);
void server_stop(pamirun_job_t *job);

/* sysv.c */
void sysv_note_pid(pamirun_job_t *job, pid_t pid);
/* Removes the private, unattached SysV segments that the job's dead
 * processes made (UCX's hook check, cut short); frees the pid list. */
void sysv_remove_orphans(pamirun_job_t *job);

/* stall.c */
/* Seconds a rank may stay stopped while a bootstrap collective waits for
 * it: PAMI_PEER_TIMEOUT (milliseconds, default 10000); 0: forever. */
double stall_timeout(void);
/* 1 when process pid is stopped by a signal (state T). */
int stall_stopped(pid_t pid);

/* output.c */
void output_start(pamirun_job_t *job, pamirun_rank_t *r, int out_fd,
                  int err_fd);
/* Forwards what is left in the rank's pipes and closes them. */
void output_finish(pamirun_job_t *job, pamirun_rank_t *r);
/* Writes all of an iovec array to fd, tolerating EINTR and EAGAIN. */
struct iovec;
int  output_writev(int fd, struct iovec *iov, int iovcnt);

/* spawn.c */
int  spawn_ranks(pamirun_job_t *job);
void job_watch_signals(pamirun_job_t *job);
void job_start_timeout(pamirun_job_t *job);
/* Kills every running rank (SIGTERM, SIGKILL after the grace) and makes
 * code the exit code unless a failure came first. */
void job_abort(pamirun_job_t *job, int code);
void job_stop_watchers(pamirun_job_t *job);

#endif
