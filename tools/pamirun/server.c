/*
 * The bootstrap server: one listening Unix socket, one connection per
 * rank and bootstrap instance, one collective at a time per instance
 * (ranks are synchronous clients, see adapters/bootstrap/local_wire.h).
 *
 * A process may bring up the bootstrap more than once (a client created
 * again, or two runtimes in one process). The k-th connection of every
 * rank forms session k, the way communicators match by creation order;
 * sessions never see each other's collectives.
 *
 * A collective completes when every rank of the session contributed to
 * the same sequence number. It fails for everyone when the lengths differ
 * (-EINVAL), or when a rank left the session first (-ECONNRESET), so no
 * rank ever waits for someone who will not come.
 *
 * A rank stopped by a signal (SIGSTOP) would hold a collective it has not
 * joined forever: one stopped for PAMI_PEER_TIMEOUT fails it for everyone
 * (-ETIMEDOUT, stall.c), watched every PAMIRUN_STALL_TICK seconds while a
 * collective is pending.
 *
 * Anything malformed from a client closes its connection: it is a bug or
 * a stranger, and that rank counts as having left. Connections from
 * outside the job's process groups are capped and must say HELLO soon
 * (admit.c), so a flood of them cannot starve the ranks.
 */
#include "pamirun.h"

#include "local_wire.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define SUBSYS PAMIRUN_SUBSYS
#define PAMIRUN_STALL_TICK 0.1 /* seconds */

/* One collective's answer, shared by every rank's connection. */
typedef struct {
    unsigned refs;
    size_t   len;
    char     data[];
} result_t;

typedef struct session session_t;

typedef struct conn {
    ev_io             rio;
    ev_io             wio;
    ev_timer          hello_timer; /* strangers only, until HELLO */
    int               stranger;    /* counted in srv->strangers */
    int               fd;
    pid_t             pid;         /* the peer process, from the socket */
    int64_t           rank;        /* -1 until HELLO */
    session_t        *sess;        /* NULL until HELLO */
    pamirun_server_t *srv;
    struct conn      *next;
    /* input: a header, then hdr.len payload bytes for a CONTRIB */
    local_wire_hdr_t  in_hdr;
    size_t            in_got;
    char             *in_buf;
    size_t            in_buf_got;
    /* output: at most one message in flight; reading pauses meanwhile */
    local_wire_hdr_t  out_hdr;
    result_t         *out_res;
    size_t            out_off;
    int               out_busy;
    int               close_after_write;
} conn_t;

typedef struct {
    char    *buf;
    uint64_t len;
    int      have;
} contrib_t;

struct session {
    uint32_t   index;
    conn_t   **by_rank;
    uint8_t   *left;      /* per rank: closed its connection, or exited */
    uint32_t   nleft;
    uint32_t   nconns;    /* open connections that point here */
    contrib_t *contrib;   /* per rank, for collective seq */
    uint32_t   ncontrib;
    uint64_t   seq;
    int        broken;    /* a collective failed for lack of a rank */
    session_t *next;
};

struct pamirun_server {
    pamirun_job_t *job;
    int            fd;
    ev_io          lio;
    conn_t        *conns;
    session_t     *sessions;
    uint32_t      *joined;  /* per rank: sessions joined so far */
    uint8_t       *exited;  /* per rank */
    uint32_t       strangers;  /* open connections from outside the job */
    int            spare;      /* see admit.c */
    ev_timer       resume;     /* restarts accepting after a pause */
    admit_log_t    refused;
    /* Stopped ranks (stall.c): the process that last said HELLO for each
     * rank, since when it is seen stopped (0: not), the watch's timer. */
    pid_t         *pids;
    double        *stopped_since;
    double         stall_timeout;  /* seconds; 0: never */
    ev_timer       stall;
};

static void result_put(result_t *res)
{
    if (res != NULL && --res->refs == 0)
        free(res);
}

/* ---- sessions ----------------------------------------------------------- */

static void contrib_clear(session_t *s, uint32_t n)
{
    for (uint32_t r = 0; r < n; r++) {
        free(s->contrib[r].buf);
        s->contrib[r] = (contrib_t){0};
    }
    s->ncontrib = 0;
}

static void session_free(pamirun_server_t *srv, session_t *s)
{
    for (session_t **p = &srv->sessions; *p != NULL; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    contrib_clear(s, srv->job->size);
    free(s->contrib);
    free(s->left);
    free(s->by_rank);
    free(s);
}

/* Finds session index, creating it for the first rank that joins. */
static session_t *session_get(pamirun_server_t *srv, uint32_t index)
{
    uint32_t n = srv->job->size;

    for (session_t *s = srv->sessions; s != NULL; s = s->next)
        if (s->index == index)
            return s;
    session_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->index   = index;
    s->by_rank = calloc(n, sizeof(*s->by_rank));
    s->left    = calloc(n, sizeof(*s->left));
    s->contrib = calloc(n, sizeof(*s->contrib));
    s->next    = srv->sessions;
    srv->sessions = s;
    if (s->by_rank == NULL || s->left == NULL || s->contrib == NULL) {
        session_free(srv, s);
        return NULL;
    }
    /* Ranks that are already dead will never join. */
    for (uint32_t r = 0; r < n; r++) {
        s->left[r] = srv->exited[r];
        s->nleft += srv->exited[r];
    }
    return s;
}

static void gather_check(pamirun_server_t *srv, session_t *s);

/* The rank will take no further part in session s; frees s once every
 * rank left and no connection points to it any more. */
static void session_leave(pamirun_server_t *srv, session_t *s, uint32_t rank)
{
    if (!s->left[rank]) {
        s->left[rank] = 1;
        s->nleft++;
        gather_check(srv, s);
    }
    if (s->nleft == srv->job->size && s->nconns == 0)
        session_free(srv, s);
}

/* ---- connections -------------------------------------------------------- */

static void conn_close(conn_t *c, const char *why)
{
    pamirun_server_t *srv = c->srv;

    if (c->rank >= 0)
        pami_debug(SUBSYS, "rank %" PRId64 " session %u: bootstrap "
                   "connection closed: %s", c->rank, c->sess->index, why);
    ev_io_stop(srv->job->loop, &c->rio);
    ev_io_stop(srv->job->loop, &c->wio);
    if (c->stranger) {
        ev_timer_stop(srv->job->loop, &c->hello_timer);
        srv->strangers--;
    }
    close(c->fd);
    free(c->in_buf);
    result_put(c->out_res);
    for (conn_t **p = &srv->conns; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    session_t *s    = c->sess;
    int64_t    rank = c->rank;
    free(c);
    if (s != NULL) {
        s->by_rank[rank] = NULL;
        s->nconns--;
        session_leave(srv, s, (uint32_t)rank);
    }
}

static void protocol_error(conn_t *c, const char *what)
{
    /* Before HELLO anyone may be talking: a flood of them must not
     * flood the log too. */
    if (c->rank < 0)
        admit_note(&c->srv->refused, ev_now(c->srv->job->loop),
                   "closing connections that send no valid HELLO");
    else
        pami_warn(SUBSYS, "bootstrap protocol error from rank %" PRId64
                  ": %s; closing its connection", c->rank, what);
    conn_close(c, "protocol error");
}

/* Queues one message; the write happens from the loop, never from here,
 * so a failing write cannot close a connection under a caller's feet. */
static void conn_send(conn_t *c, uint16_t type, uint32_t rank, uint64_t seq,
                      int32_t status, result_t *res)
{
    local_wire_hdr_init(&c->out_hdr, type);
    c->out_hdr.rank   = rank;
    c->out_hdr.size   = c->srv->job->size;
    c->out_hdr.seq    = seq;
    c->out_hdr.status = status;
    c->out_hdr.len    = res != NULL ? res->len : 0;
    c->out_res        = res;
    if (res != NULL)
        res->refs++;
    c->out_off  = 0;
    c->out_busy = 1;
    ev_io_stop(c->srv->job->loop, &c->rio);
    ev_io_start(c->srv->job->loop, &c->wio);
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    conn_t *c     = w->data;
    size_t  total = sizeof(c->out_hdr) + (size_t)c->out_hdr.len;

    while (c->out_off < total) {
        struct iovec  iov[2];
        int           cnt = 0;
        struct msghdr msg = {.msg_iov = iov};
        if (c->out_off < sizeof(c->out_hdr))
            iov[cnt++] = (struct iovec){(char *)&c->out_hdr + c->out_off,
                                        sizeof(c->out_hdr) - c->out_off};
        size_t data_off = c->out_off > sizeof(c->out_hdr)
                              ? c->out_off - sizeof(c->out_hdr) : 0;
        if (c->out_hdr.len > data_off)
            iov[cnt++] = (struct iovec){c->out_res->data + data_off,
                                        c->out_hdr.len - data_off};
        msg.msg_iovlen = (size_t)cnt;
        ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0) {
            conn_close(c, strerror(errno));
            return;
        }
        c->out_off += (size_t)n;
    }
    result_put(c->out_res);
    c->out_res  = NULL;
    c->out_busy = 0;
    ev_io_stop(loop, &c->wio);
    if (c->close_after_write)
        conn_close(c, "refused");
    else
        ev_io_start(loop, &c->rio);
}

/* ---- messages ----------------------------------------------------------- */

static int on_hello(conn_t *c, const local_wire_hdr_t *h)
{
    pamirun_server_t *srv = c->srv;
    uint32_t          n   = srv->job->size;

    if (c->rank >= 0 || h->len != 0 || h->seq != 0) {
        protocol_error(c, "unexpected hello");
        return -1;
    }
    if (h->rank >= n || h->size != n || srv->exited[h->rank]) {
        if (c->stranger)
            admit_note(&srv->refused, ev_now(srv->job->loop),
                       "refusing HELLOs from outside the job that claim no "
                       "rank of it");
        else
            pami_warn(SUBSYS, "refusing bootstrap client claiming rank %"
                      PRIu32 " of %" PRIu32 " (job has %" PRIu32 " ranks)",
                      h->rank, h->size, n);
        c->close_after_write = 1;
        conn_send(c, LOCAL_MSG_WELCOME, h->rank, 0, -EINVAL, NULL);
        return -1;
    }
    session_t *s = session_get(srv, srv->joined[h->rank]);
    if (s == NULL) {
        pami_error(SUBSYS, "out of memory for a bootstrap session");
        c->close_after_write = 1;
        conn_send(c, LOCAL_MSG_WELCOME, h->rank, 0, -ENOMEM, NULL);
        return -1;
    }
    srv->joined[h->rank]++;
    if (c->stranger) {
        /* A process of the job that left its rank's group: served. */
        ev_timer_stop(srv->job->loop, &c->hello_timer);
        c->stranger = 0;
        srv->strangers--;
    }
    struct ucred cred;
    socklen_t    clen = sizeof(cred);
    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
        c->pid                = cred.pid;
        srv->pids[h->rank]    = cred.pid;
        sysv_note_pid(srv->job, cred.pid);
    }
    c->rank             = h->rank;
    c->sess             = s;
    s->by_rank[h->rank] = c;
    s->nconns++;
    pami_debug(SUBSYS, "rank %" PRIu32 " joined session %u", h->rank,
               s->index);
    conn_send(c, LOCAL_MSG_WELCOME, h->rank, 0, 0, NULL);
    return 0;
}

/* Called once a CONTRIB's payload is complete (in_buf owns it). */
static void contrib_done(conn_t *c)
{
    session_t *s    = c->sess;
    contrib_t *slot = &s->contrib[c->rank];

    slot->buf  = c->in_buf;
    slot->len  = c->in_hdr.len;
    slot->have = 1;
    c->in_buf  = NULL;
    s->ncontrib++;
    pamirun_server_t *srv = c->srv;
    gather_check(srv, s);
    if (srv->stall_timeout > 0 && !ev_is_active(&srv->stall))
        ev_timer_start(srv->job->loop, &srv->stall);
}

static int on_contrib(conn_t *c, const local_wire_hdr_t *h)
{
    uint32_t   n = c->srv->job->size;
    session_t *s = c->sess;

    if (c->rank < 0 || h->rank != c->rank || h->size != n) {
        protocol_error(c, "contribution from an unknown rank");
        return -1;
    }
    if (s->broken) {
        /* The session is failing; this rank learns it from the closed
         * socket. */
        conn_close(c, "session broken");
        return -1;
    }
    if (h->seq != s->seq || s->contrib[c->rank].have) {
        protocol_error(c, "contribution out of sequence");
        return -1;
    }
    if (h->len > LOCAL_WIRE_MAX_CONTRIB ||
        h->len * n > LOCAL_WIRE_MAX_RESULT) {
        protocol_error(c, "contribution too large");
        return -1;
    }
    /* malloc(0) may return NULL; keep one byte so NULL means failure. */
    c->in_buf = malloc(h->len > 0 ? (size_t)h->len : 1);
    if (c->in_buf == NULL) {
        pami_error(SUBSYS, "out of memory for %" PRIu64 " bytes", h->len);
        conn_close(c, "out of memory");
        return -1;
    }
    c->in_buf_got = 0;
    if (h->len == 0)
        contrib_done(c);
    return 0;
}

/* Returns -1 when the connection was closed or is closing. */
static int on_header(conn_t *c)
{
    const local_wire_hdr_t *h = &c->in_hdr;

    if (!local_wire_hdr_valid(h)) {
        protocol_error(c, "bad magic or version");
        return -1;
    }
    switch (h->type) {
    case LOCAL_MSG_HELLO:
        return on_hello(c, h);
    case LOCAL_MSG_CONTRIB:
        return on_contrib(c, h);
    case LOCAL_MSG_BYE:
        if (c->rank < 0 || h->rank != c->rank || h->len != 0) {
            protocol_error(c, "unexpected bye");
            return -1;
        }
        conn_close(c, "bye");
        return -1;
    default:
        protocol_error(c, "unknown message type");
        return -1;
    }
}

/* Reads into the header, then into the payload; returns -1 when the
 * connection was closed, 1 when no more bytes are ready. */
static int conn_read_some(conn_t *c)
{
    int    in_payload = c->in_buf != NULL;
    char  *dst;
    size_t want;

    if (in_payload) {
        dst  = c->in_buf + c->in_buf_got;
        want = (size_t)c->in_hdr.len - c->in_buf_got;
    } else {
        dst  = (char *)&c->in_hdr + c->in_got;
        want = sizeof(c->in_hdr) - c->in_got;
    }
    ssize_t n = recv(c->fd, dst, want, 0);
    if (n < 0 && errno == EINTR)
        return 0;
    if (n < 0 && errno == EAGAIN)
        return 1;
    if (n <= 0) {
        conn_close(c, n == 0 ? "closed without bye" : strerror(errno));
        return -1;
    }
    if (in_payload) {
        c->in_buf_got += (size_t)n;
        if (c->in_buf_got == c->in_hdr.len)
            contrib_done(c);
        return 0;
    }
    c->in_got += (size_t)n;
    if (c->in_got < sizeof(c->in_hdr))
        return 0;
    c->in_got = 0;
    return on_header(c);
}

static void conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    conn_t *c = w->data;

    /* Bounded so one rank's large payload does not starve the others;
     * stop once a reply is queued (the client waits for it). */
    for (int i = 0; i < 64; i++)
        if (conn_read_some(c) != 0 || c->out_busy)
            return;
}

static void hello_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    conn_t *c = w->data;
    admit_note(&c->srv->refused, ev_now(loop),
               "closing connections from outside the job that say no HELLO "
               "in time");
    conn_close(c, "no hello in time");
}

static void resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    pamirun_server_t *srv = w->data;
    ev_io_start(loop, &srv->lio);
}

/* accept failed with nothing to shed: wait a little instead of being
 * called again at once for the same pending connection. */
static void pause_accepting(struct ev_loop *loop, pamirun_server_t *srv,
                            int err)
{
    char why[96];
    snprintf(why, sizeof(why), "accept: %s; pausing new connections",
             strerror(err));
    admit_note(&srv->refused, ev_now(loop), why);
    ev_io_stop(loop, &srv->lio);
    ev_timer_set(&srv->resume, PAMIRUN_ACCEPT_PAUSE, 0);
    ev_timer_start(loop, &srv->resume);
}

static void conn_add(struct ev_loop *loop, pamirun_server_t *srv, int fd,
                     int stranger)
{
    conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        admit_note(&srv->refused, ev_now(loop), "out of memory");
        return;
    }
    c->fd   = fd;
    c->rank = -1;
    c->srv  = srv;
    c->next = srv->conns;
    srv->conns = c;
    ev_io_init(&c->rio, conn_read_cb, fd, EV_READ);
    ev_io_init(&c->wio, conn_write_cb, fd, EV_WRITE);
    c->rio.data = c->wio.data = c;
    if (stranger) {
        c->stranger = 1;
        srv->strangers++;
        ev_timer_init(&c->hello_timer, hello_timeout_cb,
                      PAMIRUN_HELLO_TIMEOUT, 0);
        c->hello_timer.data = c;
        ev_timer_start(loop, &c->hello_timer);
    }
    ev_io_start(loop, &c->rio);
}

/* A bounded number per pass, so a flood of connections cannot keep the
 * loop from the ranks' own sockets. */
static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    pamirun_server_t *srv = w->data;

    for (int i = 0; i < PAMIRUN_ACCEPT_BATCH; i++) {
        int fd = accept4(srv->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int err = errno;
            if (err == EINTR || err == ECONNABORTED)
                continue;
            if (err == EAGAIN || err == EWOULDBLOCK)
                return;
            if ((err == EMFILE || err == ENFILE) &&
                admit_shed_with_spare(srv->fd, &srv->spare) == 0) {
                admit_note(&srv->refused, ev_now(loop), "out of file "
                           "descriptors; closing new connections");
                continue;
            }
            pause_accepting(loop, srv, err);
            return;
        }
        int kind = admit_classify(srv->job, fd);
        if (kind == ADMIT_OTHER_USER) {
            close(fd);
            admit_note(&srv->refused, ev_now(loop), "refusing connections "
                       "from another user");
            continue;
        }
        if (kind == ADMIT_STRANGER &&
            srv->strangers >= PAMIRUN_STRANGERS_MAX) {
            close(fd);
            admit_note(&srv->refused, ev_now(loop), "too many connections "
                       "from outside the job; closing new ones");
            continue;
        }
        conn_add(loop, srv, fd, kind == ADMIT_STRANGER);
    }
}

/* ---- collectives -------------------------------------------------------- */

static result_t *gather_result(session_t *s, uint32_t n, int32_t *status)
{
    uint64_t len = s->contrib[0].len;

    for (uint32_t r = 1; r < n; r++) {
        if (s->contrib[r].len != len) {
            pami_warn(SUBSYS, "allgather %" PRIu64 ": rank 0 gave %" PRIu64
                      " bytes but rank %" PRIu32 " gave %" PRIu64, s->seq,
                      len, r, s->contrib[r].len);
            *status = -EINVAL;
            return NULL;
        }
    }
    result_t *res = malloc(sizeof(*res) + (size_t)(len * n));
    if (res == NULL) {
        pami_error(SUBSYS, "out of memory for an allgather of %" PRIu64
                   " bytes", len * n);
        *status = -ENOMEM;
        return NULL;
    }
    res->refs = 1;
    res->len  = (size_t)(len * n);
    for (uint32_t r = 0; r < n; r++)
        if (len > 0)
            memcpy(res->data + r * len, s->contrib[r].buf, (size_t)len);
    *status = 0;
    return res;
}

/* Answers every contributor of the current collective and moves on. */
static void gather_finish(session_t *s, uint32_t n, int32_t status,
                          result_t *res)
{
    for (uint32_t r = 0; r < n; r++)
        if (s->contrib[r].have && s->by_rank[r] != NULL)
            conn_send(s->by_rank[r], LOCAL_MSG_RESULT, r, s->seq, status,
                      res);
    result_put(res);
    contrib_clear(s, n);
    s->seq++;
}

static void gather_check(pamirun_server_t *srv, session_t *s)
{
    uint32_t n = srv->job->size;

    if (s->ncontrib == 0)
        return;
    if (s->ncontrib == n) {
        int32_t   status;
        result_t *res = gather_result(s, n, &status);
        pami_debug(SUBSYS, "session %u allgather %" PRIu64 " of %" PRIu64
                   " bytes: %s", s->index, s->seq, s->contrib[0].len,
                   status == 0 ? "ok" : "failed");
        gather_finish(s, n, status, res);
        return;
    }
    for (uint32_t r = 0; r < n; r++) {
        if (s->left[r] && !s->contrib[r].have) {
            pami_warn(SUBSYS, "allgather %" PRIu64 " cannot complete: rank "
                      "%" PRIu32 " left the job", s->seq, r);
            s->broken = 1;
            gather_finish(s, n, -ECONNRESET, NULL);
            return;
        }
    }
}

/* Whether rank r, which collective s waits for, has been stopped too
 * long. */
static int rank_hung(pamirun_server_t *srv, uint32_t r, double now)
{
    pid_t pid = srv->pids[r] > 0 ? srv->pids[r] : srv->job->ranks[r].pid;
    if (!stall_stopped(pid)) {
        srv->stopped_since[r] = 0;
        return 0;
    }
    if (srv->stopped_since[r] == 0)
        srv->stopped_since[r] = now;
    return now - srv->stopped_since[r] >= srv->stall_timeout;
}

static void stall_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    pamirun_server_t *srv     = w->data;
    uint32_t          n       = srv->job->size;
    double            now     = ev_now(loop);
    int               pending = 0;
    for (session_t *s = srv->sessions; s != NULL; s = s->next) {
        if (s->ncontrib == 0 || s->broken)
            continue;
        pending = 1;
        for (uint32_t r = 0; r < n; r++) {
            if (s->contrib[r].have || s->left[r] || !rank_hung(srv, r, now))
                continue;
            pami_warn(SUBSYS, "allgather %" PRIu64 " cannot complete: rank "
                      "%" PRIu32 " is stopped (state T) for %.1f s "
                      "(PAMI_PEER_TIMEOUT)", s->seq, r,
                      now - srv->stopped_since[r]);
            s->broken = 1;
            gather_finish(s, n, -ETIMEDOUT, NULL);
            break;
        }
    }
    if (!pending)
        ev_timer_stop(loop, w);
}

void server_rank_gone(pamirun_server_t *srv, uint32_t rank)
{
    if (srv == NULL || rank >= srv->job->size || srv->exited[rank])
        return;
    srv->exited[rank] = 1;
    /* session_leave may free the session it is given. */
    session_t *next;
    for (session_t *s = srv->sessions; s != NULL; s = next) {
        next = s->next;
        session_leave(srv, s, rank);
    }
}

/* ---- lifetime ----------------------------------------------------------- */

static int listen_socket(pamirun_job_t *job)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};

    strcpy(addr.sun_path, job->sock_path); /* length checked by workdir */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

int server_start(pamirun_job_t *job)
{
    pamirun_server_t *srv = calloc(1, sizeof(*srv));

    if (srv == NULL)
        return -1;
    srv->job    = job;
    srv->fd     = -1;
    srv->spare  = admit_spare_open();
    srv->joined = calloc(job->size, sizeof(*srv->joined));
    srv->exited = calloc(job->size, sizeof(*srv->exited));
    srv->pids   = calloc(job->size, sizeof(*srv->pids));
    srv->stopped_since = calloc(job->size, sizeof(*srv->stopped_since));
    if (srv->joined == NULL || srv->exited == NULL || srv->pids == NULL ||
        srv->stopped_since == NULL)
        goto fail;
    srv->stall_timeout = stall_timeout();
    ev_timer_init(&srv->stall, stall_cb, PAMIRUN_STALL_TICK,
                  PAMIRUN_STALL_TICK);
    srv->stall.data = srv;
    srv->fd = listen_socket(job);
    if (srv->fd < 0) {
        fprintf(stderr, "pamirun: cannot listen on %s: %s\n", job->sock_path,
                strerror(errno));
        goto fail;
    }
    ev_io_init(&srv->lio, accept_cb, srv->fd, EV_READ);
    srv->lio.data = srv;
    ev_timer_init(&srv->resume, resume_cb, PAMIRUN_ACCEPT_PAUSE, 0);
    srv->resume.data = srv;
    ev_io_start(job->loop, &srv->lio);
    job->server = srv;
    return 0;

fail:
    if (srv->spare >= 0)
        close(srv->spare);
    free(srv->stopped_since);
    free(srv->pids);
    free(srv->exited);
    free(srv->joined);
    free(srv);
    return -1;
}

void server_stop(pamirun_job_t *job)
{
    pamirun_server_t *srv = job->server;

    if (srv == NULL)
        return;
    job->server = NULL;
    /* Detach connections from their sessions first: closing them now must
     * not answer or fail any collective. */
    for (conn_t *c = srv->conns; c != NULL; c = c->next) {
        c->sess = NULL;
        c->rank = -1;
    }
    while (srv->conns != NULL)
        conn_close(srv->conns, "launcher exiting");
    while (srv->sessions != NULL)
        session_free(srv, srv->sessions);
    ev_io_stop(job->loop, &srv->lio);
    ev_timer_stop(job->loop, &srv->resume);
    ev_timer_stop(job->loop, &srv->stall);
    close(srv->fd);
    if (srv->spare >= 0)
        close(srv->spare);
    admit_log_end(&srv->refused);
    free(srv->stopped_since);
    free(srv->pids);
    free(srv->exited);
    free(srv->joined);
    free(srv);
}
