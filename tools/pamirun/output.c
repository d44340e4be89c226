/*
 * Forwards each rank's stdout and stderr line by line, as the rank wrote
 * them or, with --tag-output, behind a "[rank] " prefix. A whole line
 * leaves in one writev, so lines of different ranks never mix; a line
 * longer than the buffer leaves in pieces (any prefix only on the first).
 * Bytes are never dropped or reordered.
 */
#include "pamirun.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* A dead rank's pipe holds at most its capacity (64 KiB by default, 1 MiB
 * at most); reads beyond that come from a grandchild still writing. */
#define FINISH_MAX_READS (((1 << 20) / PAMIRUN_LINE_MAX) + 1)

int output_writev(int fd, struct iovec *iov, int iovcnt)
{
    while (iovcnt > 0) {
        ssize_t n = writev(fd, iov, iovcnt);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                /* Our stdout may be a non-blocking fd we inherited. */
                struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                poll(&pfd, 1, -1);
                continue;
            }
            return -1; /* EPIPE and the like: nobody is reading */
        }
        while (iovcnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

/* Writes data (len bytes), with the prefix (if tagging) when it starts a
 * line and a newline when end_line. */
static void emit(pamirun_stream_t *s, const char *data, size_t len,
                 int end_line)
{
    char         prefix[16];
    struct iovec iov[3];
    int          cnt = 0;

    if (s->tag && s->at_line_start) {
        int n = snprintf(prefix, sizeof(prefix), "[%u] ", s->rank);
        iov[cnt++] = (struct iovec){prefix, (size_t)n};
    }
    if (len > 0)
        iov[cnt++] = (struct iovec){(void *)data, len};
    if (end_line)
        iov[cnt++] = (struct iovec){"\n", 1};
    if (output_writev(s->out_fd, iov, cnt) != 0)
        s->broken = 1;
    s->at_line_start = end_line;
}

/* Forwards every complete line in the buffer and keeps the rest; a full
 * buffer without a newline goes out as a piece of a line. */
static void forward_lines(pamirun_stream_t *s)
{
    size_t start = 0;

    while (!s->broken) {
        char *nl = memchr(s->buf + start, '\n', s->used - start);
        if (nl == NULL)
            break;
        size_t len = (size_t)(nl - (s->buf + start));
        emit(s, s->buf + start, len, 1);
        start += len + 1;
    }
    if (start == 0 && s->used == sizeof(s->buf) && !s->broken) {
        emit(s, s->buf, s->used, 0);
        start = s->used;
    }
    memmove(s->buf, s->buf + start, s->used - start);
    s->used -= start;
}

static void stream_close(pamirun_job_t *job, pamirun_stream_t *s)
{
    if (s->fd < 0)
        return;
    /* A last line without its newline still gets one, so the next line
     * of another rank starts where it should. */
    if (!s->broken && (s->used > 0 || !s->at_line_start))
        emit(s, s->buf, s->used, 1);
    s->used = 0;
    ev_io_stop(job->loop, &s->io);
    close(s->fd);
    s->fd = -1;
}

/* Reads what the pipe has now, at most max_reads times so one chatty
 * writer cannot starve the loop; closes the stream at EOF or error. */
static void stream_read(pamirun_job_t *job, pamirun_stream_t *s,
                        int max_reads)
{
    while (s->fd >= 0 && max_reads-- > 0) {
        ssize_t n = read(s->fd, s->buf + s->used, sizeof(s->buf) - s->used);
        if (n > 0) {
            s->used += (size_t)n;
            forward_lines(s);
            /* Like a shell pipeline: when nobody reads our side any more,
             * closing the pipe lets the rank see SIGPIPE too. */
            if (s->broken)
                stream_close(job, s);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0)
            pami_warn(PAMIRUN_SUBSYS, "reading output of rank %u: %s",
                      s->rank, strerror(errno));
        stream_close(job, s);
    }
}

static void stream_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    pamirun_job_t *job = ev_userdata(loop);
    stream_read(job, (pamirun_stream_t *)w, 16);
}

static void stream_init(pamirun_job_t *job, pamirun_stream_t *s,
                        uint32_t rank, int fd, int out_fd)
{
    s->fd            = fd;
    s->out_fd        = out_fd;
    s->rank          = rank;
    s->tag           = job->tag_output;
    s->at_line_start = 1;
    s->broken        = 0;
    s->used          = 0;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    ev_io_init(&s->io, stream_cb, fd, EV_READ);
    ev_io_start(job->loop, &s->io);
}

void output_start(pamirun_job_t *job, pamirun_rank_t *r, int out_fd,
                  int err_fd)
{
    stream_init(job, &r->out, r->rank, out_fd, STDOUT_FILENO);
    stream_init(job, &r->err, r->rank, err_fd, STDERR_FILENO);
}

void output_finish(pamirun_job_t *job, pamirun_rank_t *r)
{
    /* Everything the rank wrote is in the pipe by now; anything a
     * leftover grandchild writes later is not the rank's output. */
    stream_read(job, &r->out, FINISH_MAX_READS);
    stream_read(job, &r->err, FINISH_MAX_READS);
    stream_close(job, &r->out);
    stream_close(job, &r->err);
}
