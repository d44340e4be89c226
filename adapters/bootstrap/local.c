/*
 * Client side of the "local" bootstrap: talks to pamirun over the Unix
 * socket it names in PAMI_BOOTSTRAP_SOCKET (wire format in local_wire.h).
 * Without that variable the program is a singleton: rank 0 of 1, so a
 * program started by hand still works.
 *
 * I/O is blocking on purpose: bootstrap calls are collective and rare, and
 * the launcher either answers, or dies and the socket closes.
 */
#include "bootstrap.h"
#include "local_wire.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SUBSYS "bootstrap"

typedef struct {
    int       fd;     /* -1 for a singleton */
    uint32_t  rank;
    uint32_t  size;
    uint64_t  seq;    /* next collective number */
    char     *job_id;
} local_state_t;

/* ---- full, EINTR-safe socket I/O ---------------------------------------- */

/* MSG_NOSIGNAL: a launcher that went away must give -ECONNRESET, not kill
 * the program with SIGPIPE. */
static int write_full(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE || errno == ECONNRESET) {
                pami_error(SUBSYS, "launcher closed the bootstrap socket");
                return -ECONNRESET;
            }
            pami_error(SUBSYS, "bootstrap send failed: %s", strerror(errno));
            return -EIO;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_full(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            pami_error(SUBSYS, "launcher closed the bootstrap socket");
            return -ECONNRESET;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            pami_error(SUBSYS, "bootstrap recv failed: %s", strerror(errno));
            return -EIO;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int send_msg(local_state_t *st, uint16_t type, uint64_t seq,
                    const void *payload, size_t len)
{
    local_wire_hdr_t hdr;

    local_wire_hdr_init(&hdr, type);
    hdr.rank = st->rank;
    hdr.size = st->size;
    hdr.seq  = seq;
    hdr.len  = len;
    int rc = write_full(st->fd, &hdr, sizeof(hdr));
    if (rc == 0 && len > 0)
        rc = write_full(st->fd, payload, len);
    return rc;
}

/* Reads a header and checks what every reply must satisfy. */
static int recv_hdr(local_state_t *st, uint16_t type, local_wire_hdr_t *hdr)
{
    int rc = read_full(st->fd, hdr, sizeof(*hdr));
    if (rc != 0)
        return rc;
    if (!local_wire_hdr_valid(hdr) || hdr->type != type ||
        hdr->rank != st->rank) {
        pami_error(SUBSYS, "malformed reply from launcher (magic 0x%08" PRIx32
                   " version %u type %u rank %" PRIu32 ")", hdr->magic,
                   hdr->version, hdr->type, hdr->rank);
        return -EIO;
    }
    if (hdr->status > 0 || hdr->status < -4095) {
        pami_error(SUBSYS, "launcher sent invalid status %" PRId32,
                   hdr->status);
        return -EIO;
    }
    return 0;
}

/* ---- environment -------------------------------------------------------- */

static int env_u32(const char *name, uint32_t *out)
{
    const char *text = getenv(name);
    char       *end;

    if (text == NULL || *text == '\0') {
        pami_error(SUBSYS, "%s is not set; start the program with pamirun",
                   name);
        return -EINVAL;
    }
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno != 0 || *end != '\0' || text[0] == '-' || v > UINT32_MAX) {
        pami_error(SUBSYS, "%s='%s' is not a valid number", name, text);
        return -EINVAL;
    }
    *out = (uint32_t)v;
    return 0;
}

/* The job id ends up in names of shared objects: keep it to a safe
 * alphabet so it can never add a path component. */
static int job_id_valid(const char *id)
{
    size_t n = strlen(id);

    if (n == 0 || n > 64)
        return 0;
    return strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789-_.") == n;
}

static int read_env(local_state_t *st, const char **path)
{
    int rc;

    if ((rc = env_u32(PAMIRUN_ENV_RANK, &st->rank)) != 0 ||
        (rc = env_u32(PAMIRUN_ENV_SIZE, &st->size)) != 0)
        return rc;
    if (st->size == 0 || st->size > LOCAL_WIRE_MAX_SIZE ||
        st->rank >= st->size) {
        pami_error(SUBSYS, "bad rank %" PRIu32 " of size %" PRIu32,
                   st->rank, st->size);
        return -EINVAL;
    }
    const char *id = getenv(PAMIRUN_ENV_JOBID);
    if (id == NULL || !job_id_valid(id)) {
        pami_error(SUBSYS, "%s is missing or not a plain token",
                   PAMIRUN_ENV_JOBID);
        return -EINVAL;
    }
    st->job_id = strdup(id);
    if (st->job_id == NULL)
        return -ENOMEM;
    *path = getenv(PAMIRUN_ENV_SOCKET);
    return 0;
}

/* ---- connection --------------------------------------------------------- */

static int connect_socket(const char *path, int *fd_out)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};

    if (strlen(path) >= sizeof(addr.sun_path)) {
        pami_error(SUBSYS, "socket path '%s' is too long", path);
        return -EINVAL;
    }
    strcpy(addr.sun_path, path);

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        pami_error(SUBSYS, "socket: %s", strerror(errno));
        return -EIO;
    }
    int rc;
    do {
        rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        int err = errno;
        pami_error(SUBSYS, "cannot connect to launcher at '%s': %s", path,
                   strerror(err));
        close(fd);
        return (err == ENOENT || err == ECONNREFUSED) ? -ECONNRESET : -EIO;
    }
    *fd_out = fd;
    return 0;
}

static int say_hello(local_state_t *st)
{
    local_wire_hdr_t hdr;
    int              rc;

    if ((rc = send_msg(st, LOCAL_MSG_HELLO, 0, NULL, 0)) != 0 ||
        (rc = recv_hdr(st, LOCAL_MSG_WELCOME, &hdr)) != 0)
        return rc;
    if (hdr.len != 0) {
        pami_error(SUBSYS, "welcome carries %" PRIu64 " unexpected bytes",
                   hdr.len);
        return -EIO;
    }
    if (hdr.status != 0) {
        pami_error(SUBSYS, "launcher refused rank %" PRIu32 ": %s", st->rank,
                   strerror(-hdr.status));
        return hdr.status;
    }
    if (hdr.size != st->size) {
        pami_error(SUBSYS, "%s=%" PRIu32 " but the launcher runs %" PRIu32
                   " ranks", PAMIRUN_ENV_SIZE, st->size, hdr.size);
        return -EINVAL;
    }
    return 0;
}

static void state_free(local_state_t *st)
{
    if (st->fd >= 0)
        close(st->fd);
    free(st->job_id);
    free(st);
}

static int init_singleton(local_state_t *st)
{
    char id[32];

    snprintf(id, sizeof(id), "single-%ld", (long)getpid());
    st->rank   = 0;
    st->size   = 1;
    st->job_id = strdup(id);
    return st->job_id != NULL ? 0 : -ENOMEM;
}

/* ---- ops ---------------------------------------------------------------- */

static int local_detect(void)
{
    return getenv(PAMIRUN_ENV_SOCKET) != NULL;
}

static int local_init(const bootstrap_args_t *args, void **state,
                      uint32_t *rank, uint32_t *size)
{
    (void)args;
    pami_log_init();

    local_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return -ENOMEM;
    st->fd = -1;

    int rc;
    if (getenv(PAMIRUN_ENV_SOCKET) == NULL) {
        rc = init_singleton(st);
    } else {
        const char *path = NULL;
        if ((rc = read_env(st, &path)) == 0 &&
            (rc = connect_socket(path, &st->fd)) == 0)
            rc = say_hello(st);
    }
    if (rc != 0) {
        state_free(st);
        return rc;
    }
    pami_debug(SUBSYS, "local bootstrap up: rank %" PRIu32 " of %" PRIu32
               ", job %s", st->rank, st->size, st->job_id);
    *state = st;
    *rank  = st->rank;
    *size  = st->size;
    return 0;
}

/* Reads the RESULT of collective seq into recv (size * len bytes). */
static int recv_result(local_state_t *st, uint64_t seq, void *recv,
                       size_t len)
{
    local_wire_hdr_t hdr;
    int              rc = recv_hdr(st, LOCAL_MSG_RESULT, &hdr);

    if (rc != 0)
        return rc;
    if (hdr.seq != seq) {
        pami_error(SUBSYS, "launcher answered collective %" PRIu64
                   " while %" PRIu64 " is pending", hdr.seq, seq);
        return -EIO;
    }
    if (hdr.status != 0) {
        if (hdr.len != 0)
            return -EIO;
        if (hdr.status == -EINVAL)
            pami_error(SUBSYS, "allgather %" PRIu64 ": ranks passed "
                       "different lengths (this rank: %zu)", seq, len);
        else
            pami_error(SUBSYS, "allgather %" PRIu64 " failed: %s", seq,
                       strerror(-hdr.status));
        return hdr.status;
    }
    if (hdr.len != (uint64_t)st->size * len) {
        pami_error(SUBSYS, "allgather %" PRIu64 ": launcher sent %" PRIu64
                   " bytes, expected %" PRIu64, seq, hdr.len,
                   (uint64_t)st->size * len);
        return -EIO;
    }
    return hdr.len > 0 ? read_full(st->fd, recv, (size_t)hdr.len) : 0;
}

static int local_allgather(void *state, const void *send, void *recv,
                           size_t len)
{
    local_state_t *st = state;

    if (st->fd < 0) {
        if (len > 0 && send != recv)
            memmove(recv, send, len);
        return 0;
    }
    /* Same len on every rank, so every rank refuses alike without asking. */
    if ((uint64_t)len > LOCAL_WIRE_MAX_CONTRIB ||
        (uint64_t)len * st->size > LOCAL_WIRE_MAX_RESULT) {
        pami_error(SUBSYS, "allgather of %zu bytes per rank exceeds the "
                   "local bootstrap's limit", len);
        return -EINVAL;
    }
    if (len > 0 && (send == NULL || recv == NULL))
        return -EINVAL;

    uint64_t seq = st->seq++;
    int      rc  = send_msg(st, LOCAL_MSG_CONTRIB, seq, send, len);
    if (rc == 0)
        rc = recv_result(st, seq, recv, len);
    return rc;
}

static int local_barrier(void *state)
{
    return local_allgather(state, NULL, NULL, 0);
}

static const char *local_job_id(void *state)
{
    return ((local_state_t *)state)->job_id;
}

static void local_fini(void *state)
{
    local_state_t *st = state;

    if (st == NULL)
        return;
    /* Best effort and quiet: a launcher that is already gone needs no
     * goodbye, and one header always fits in the socket buffer. */
    if (st->fd >= 0) {
        local_wire_hdr_t hdr;
        local_wire_hdr_init(&hdr, LOCAL_MSG_BYE);
        hdr.rank = st->rank;
        hdr.size = st->size;
        if (send(st->fd, &hdr, sizeof(hdr), MSG_NOSIGNAL) != sizeof(hdr))
            pami_debug(SUBSYS, "could not say bye to the launcher");
    }
    state_free(st);
}

const bootstrap_ops_t bootstrap_local_ops = {
    .name      = "local",
    .detect    = local_detect,
    .init      = local_init,
    .allgather = local_allgather,
    .barrier   = local_barrier,
    .job_id    = local_job_id,
    .fini      = local_fini,
};
