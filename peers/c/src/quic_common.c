#include "quic_common.h"

#include <errno.h>
#include <stdarg.h>
#include <gnutls/crypto.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "quic_tls.h"

#define CHUNK_MIN (64 * 1024)
#define MAX_PACKETS_PER_WRITE 256
#define GSO_MAX_SEGMENTS 32

/* ------------------------------------------------------------------ stream buffers */

static qstream *stream_new(qconn *c, int64_t id) {
    qstream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->id = id;
    s->c = c;
    c->n_streams++;
    return s;
}

static void stream_free(qstream *s) {
    for (qchunk *k = s->head; k;) {
        qchunk *n = k->next;
        free(k);
        k = n;
    }
    buf_free(&s->rbuf);
    s->c->n_streams--;
    free(s);
}

static bool has_output(const qstream *s) {
    if (s->blocked || s->shut || s->closed) return false;
    return s->queued > s->sent || (s->fin_queued && !s->fin_sent);
}

static void send_list_add(qstream *s) {
    if (s->in_send_list) return;
    qconn *c = s->c;
    s->in_send_list = true;
    /* append at the tail: streams take turns */
    if (!c->send_head) {
        c->send_head = s;
        s->snext = s->sprev = s;
    } else {
        qstream *tail = c->send_head->sprev;
        s->snext = c->send_head;
        s->sprev = tail;
        tail->snext = s;
        c->send_head->sprev = s;
    }
}

static void send_list_remove(qstream *s) {
    if (!s->in_send_list) return;
    qconn *c = s->c;
    s->in_send_list = false;
    if (s->snext == s) {
        c->send_head = NULL;
    } else {
        s->sprev->snext = s->snext;
        s->snext->sprev = s->sprev;
        if (c->send_head == s) c->send_head = s->snext;
    }
    s->snext = s->sprev = NULL;
}

uint8_t *qs_reserve(qstream *s, size_t n) {
    if (s->tail && s->tail->cap - s->tail->len >= n) return s->tail->data + s->tail->len;
    size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;
    qchunk *k = malloc(sizeof *k + cap);
    if (!k) return NULL;
    k->next = NULL;
    k->len = 0;
    k->cap = cap;
    if (!s->head) {
        s->head = s->tail = s->cur = k;
        s->cur_off = 0;
        s->head_base = s->acked;
    } else {
        s->tail->next = k;
        s->tail = k;
        if (!s->cur) {
            s->cur = k;
            s->cur_off = 0;
        }
    }
    return k->data;
}

void qs_commit(qstream *s, size_t n) {
    s->tail->len += n;
    s->queued += n;
    send_list_add(s);
}

bool qs_append(qstream *s, const void *data, size_t n) {
    uint8_t *p = qs_reserve(s, n);
    if (!p) return false;
    memcpy(p, data, n);
    qs_commit(s, n);
    return true;
}

void qs_finish(qstream *s) {
    s->fin_queued = true;
    send_list_add(s);
}

void qs_abort(qstream *s, uint64_t code) {
    if (s->shut || s->closed) return;
    s->shut = true;
    send_list_remove(s);
    ngtcp2_conn_shutdown_stream(s->c->conn, s->id, code);
}

/* The next unsent bytes: a contiguous piece of the current chunk. */
static size_t stream_vec(qstream *s, ngtcp2_vec *v) {
    while (s->cur && s->cur_off == s->cur->len && s->cur->next) {
        s->cur = s->cur->next;
        s->cur_off = 0;
    }
    if (!s->cur || s->cur_off == s->cur->len) {
        v->base = NULL;
        v->len = 0;
        return 0;
    }
    v->base = s->cur->data + s->cur_off;
    v->len = s->cur->len - s->cur_off;
    return 1;
}

static void stream_sent(qstream *s, size_t n, bool fin) {
    s->sent += n;
    s->cur_off += n;
    if (fin) s->fin_sent = true;
}

static void stream_acked(qstream *s, uint64_t upto) {
    if (upto > s->acked) s->acked = upto;
    while (s->head && s->head_base + s->head->len <= s->acked) {
        qchunk *k = s->head;
        if (k == s->tail && s->cur == k && s->cur_off < k->len) break; /* unsent bytes remain */
        if (s->cur == k) {
            s->cur = k->next;
            s->cur_off = 0;
        }
        s->head = k->next;
        if (s->tail == k) s->tail = NULL;
        s->head_base += k->len;
        free(k);
    }
}

/* ------------------------------------------------------------------ ngtcp2 callbacks */

static void mark_ready(qconn *c, qstream *s) {
    if (s->in_ready) return;
    s->in_ready = true;
    s->rnext = c->ready;
    c->ready = s;
}

static void rand_cb(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx) {
    (void)ctx;
    (void)gnutls_rnd(GNUTLS_RND_RANDOM, dest, len);
}

static int new_cid_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *ud) {
    qconn *c = ud;
    (void)conn;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    cid->datalen = cidlen;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    if (c->n_scids < QUIC_MAX_SCIDS) c->scids[c->n_scids++] = *cid;
    return 0;
}

static int handshake_completed_cb(ngtcp2_conn *conn, void *ud) {
    (void)conn;
    ((qconn *)ud)->handshake_done = true;
    return 0;
}

static int recv_stream_data_cb(ngtcp2_conn *conn, uint32_t flags, int64_t id, uint64_t offset,
                               const uint8_t *data, size_t len, void *ud, void *sud) {
    qconn *c = ud;
    qstream *s = sud;
    (void)offset;
    if (!s) {
        if (!c->is_server) return 0; /* a stream we do not know: ignore its data */
        s = stream_new(c, id);
        if (!s) return NGTCP2_ERR_CALLBACK_FAILURE;
        ngtcp2_conn_set_stream_user_data(conn, id, s);
    }
    if (len && !buf_append(&s->rbuf, data, len)) return NGTCP2_ERR_CALLBACK_FAILURE;
    if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) s->fin_received = true;
    /* the application reads everything at once: give the credit straight back */
    ngtcp2_conn_extend_max_stream_offset(conn, id, len);
    ngtcp2_conn_extend_max_offset(conn, len);
    s->data_pending = true;
    mark_ready(c, s);
    return 0;
}

static int acked_cb(ngtcp2_conn *conn, int64_t id, uint64_t offset, uint64_t len, void *ud, void *sud) {
    (void)conn;
    (void)id;
    (void)ud;
    qstream *s = sud;
    if (s) stream_acked(s, offset + len);
    return 0;
}

static int stream_close_cb(ngtcp2_conn *conn, uint32_t flags, int64_t id, uint64_t code, void *ud, void *sud) {
    qconn *c = ud;
    qstream *s = sud;
    (void)flags;
    (void)code;
    if (c->is_server && !ngtcp2_conn_is_local_stream(conn, id)) ngtcp2_conn_extend_max_streams_bidi(conn, 1);
    if (!s) return 0;
    s->closed = true;
    send_list_remove(s);
    mark_ready(c, s);
    return 0;
}

/* The peer reset its side (RESET_STREAM) or will not read ours (STOP_SENDING): either way the
 * call cannot complete. */
static int mark_reset(void *ud, void *sud, uint64_t code) {
    qconn *c = ud;
    qstream *s = sud;
    if (!s) return 0;
    s->reset_received = true;
    s->reset_code = code;
    s->data_pending = true;
    mark_ready(c, s);
    return 0;
}

static int stream_reset_cb(ngtcp2_conn *conn, int64_t id, uint64_t final_size, uint64_t code, void *ud, void *sud) {
    (void)conn;
    (void)id;
    (void)final_size;
    return mark_reset(ud, sud, code);
}

static int stop_sending_cb(ngtcp2_conn *conn, int64_t id, uint64_t code, void *ud, void *sud) {
    (void)conn;
    (void)id;
    return mark_reset(ud, sud, code);
}

static bool streams_extended;
static int extend_streams_cb(ngtcp2_conn *conn, uint64_t max, void *ud) {
    (void)conn;
    (void)max;
    (void)ud;
    streams_extended = true;
    return 0;
}

static int extend_stream_data_cb(ngtcp2_conn *conn, int64_t id, uint64_t max, void *ud, void *sud) {
    (void)conn;
    (void)id;
    (void)max;
    (void)ud;
    qstream *s = sud;
    if (s && s->blocked) {
        s->blocked = false;
        if (has_output(s)) send_list_add(s);
    }
    return 0;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) { return ((qconn *)ref->user_data)->conn; }

static void callbacks(ngtcp2_callbacks *cb, bool server) {
    memset(cb, 0, sizeof *cb);
    if (server) cb->recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    else {
        cb->client_initial = ngtcp2_crypto_client_initial_cb;
        cb->recv_retry = ngtcp2_crypto_recv_retry_cb;
    }
    cb->recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    cb->handshake_completed = handshake_completed_cb;
    cb->encrypt = ngtcp2_crypto_encrypt_cb;
    cb->decrypt = ngtcp2_crypto_decrypt_cb;
    cb->hp_mask = ngtcp2_crypto_hp_mask_cb;
    cb->recv_stream_data = recv_stream_data_cb;
    cb->acked_stream_data_offset = acked_cb;
    cb->stream_close = stream_close_cb;
    cb->stream_reset = stream_reset_cb;
    cb->stream_stop_sending = stop_sending_cb;
    cb->extend_max_local_streams_bidi = extend_streams_cb;
    cb->extend_max_stream_data = extend_stream_data_cb;
    cb->rand = rand_cb;
    cb->get_new_connection_id = new_cid_cb;
    cb->update_key = ngtcp2_crypto_update_key_cb;
    cb->delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    cb->delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    cb->get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    cb->version_negotiation = ngtcp2_crypto_version_negotiation_cb;
}

/* docs/stacks.md "quic": 16 MiB windows, 10,000 bidi streams (server), no uni streams, 30 s idle
 * timeout, Cubic. */
static void log_printf(void *ud, const char *fmt, ...) {
    (void)ud;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void settings_params(ngtcp2_settings *st, ngtcp2_transport_params *tp, bool server) {
    ngtcp2_settings_default(st);
    if (getenv("RPCARENA_PEER_C_TRACE_QUIC")) st->log_printf = log_printf; /* debugging only */
    st->initial_ts = now_ns();
    st->cc_algo = NGTCP2_CC_ALGO_CUBIC;
    st->max_window = FLOW_WINDOW;
    st->max_stream_window = FLOW_WINDOW;
    st->handshake_timeout = 10 * NGTCP2_SECONDS;
    ngtcp2_transport_params_default(tp);
    tp->initial_max_data = FLOW_WINDOW;
    tp->initial_max_stream_data_bidi_local = FLOW_WINDOW;
    tp->initial_max_stream_data_bidi_remote = FLOW_WINDOW;
    tp->initial_max_stream_data_uni = FLOW_WINDOW;
    tp->initial_max_streams_bidi = server ? MAX_CONCURRENT_STREAMS : 0;
    tp->initial_max_streams_uni = 0;
    tp->max_idle_timeout = QUIC_IDLE_TIMEOUT_NS;
}

/* ------------------------------------------------------------------ sockets and the loop */

static int timer_fd(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC); }

static void arm(int fd, uint64_t at) {
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (at) {
        if (at < 1) at = 1;
        its.it_value.tv_sec = (time_t)(at / NS_PER_SEC);
        its.it_value.tv_nsec = (long)(at % NS_PER_SEC);
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    }
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

bool qloop_init(qloop *l, const addr_t *bind_addr, bool is_server, char *err, size_t errlen) {
    memset(l, 0, sizeof *l);
    l->is_server = is_server;
    l->fd = socket(bind_addr->ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0) {
        snprintf(err, errlen, "cannot open a UDP socket: %s", strerror(errno));
        return false;
    }
    l->udp_buffer = set_udp_buffers(l->fd);
    if (bind(l->fd, (const struct sockaddr *)&bind_addr->ss, bind_addr->len) != 0) {
        snprintf(err, errlen, "cannot bind a UDP socket to it: %s", strerror(errno));
        close(l->fd);
        return false;
    }
    int seg = 1200;
    l->gso = setsockopt(l->fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg) == 0;
    seg = 0;
    if (l->gso) setsockopt(l->fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg);
    l->local.len = sizeof l->local.ss;
    getsockname(l->fd, (struct sockaddr *)&l->local.ss, &l->local.len);
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->tfd = timer_fd();
    l->afd = timer_fd();
    l->pfd = timer_fd();
    l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int fds[5] = {l->fd, l->tfd, l->afd, l->efd, l->pfd};
    for (int i = 0; i < 5; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        epoll_ctl(l->ep, EPOLL_CTL_ADD, fds[i], &ev);
    }
    return true;
}

void qloop_wake(qloop *l) {
    uint64_t one = 1;
    ssize_t n = write(l->efd, &one, sizeof one);
    (void)n;
}

void qloop_set_app_timer(qloop *l, uint64_t at) {
    l->app_timer_at = at;
    arm(l->afd, at);
}

void qloop_set_poll(qloop *l, uint64_t interval_ns) {
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_interval.tv_sec = (time_t)(interval_ns / NS_PER_SEC);
    its.it_interval.tv_nsec = (long)(interval_ns % NS_PER_SEC);
    its.it_value = its.it_interval; /* relative: the first poll one interval from now */
    timerfd_settime(l->pfd, 0, &its, NULL);
}

static void send_packet(qconn *c, const uint8_t *data, size_t len) {
    ssize_t n;
    do {
        n = sendto(c->loop->fd, data, len, 0, (const struct sockaddr *)&c->remote.ss, c->remote.len);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) {
        c->tx_datagrams++;
        c->tx_bytes += len;
        c->tx_calls++;
    }
    /* EAGAIN: the socket buffer is full; QUIC recovers the packet as lost */
}

/* Sends `count` packets of `segment` bytes (the last may be shorter) in one sendmsg with
 * UDP_SEGMENT (generic segmentation offload), as quinn does where the kernel supports it. */
static void send_batch(qconn *c, const uint8_t *data, size_t len, size_t segment, int count) {
    if (count <= 1 || !c->loop->gso) {
        for (size_t off = 0; off < len; off += segment) send_packet(c, data + off, len - off < segment ? len - off : segment);
        return;
    }
    struct iovec iov = {(void *)data, len};
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctrl;
    memset(&ctrl, 0, sizeof ctrl);
    struct msghdr msg = {0};
    msg.msg_name = &c->remote.ss;
    msg.msg_namelen = c->remote.len;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl.buf;
    msg.msg_controllen = sizeof ctrl.buf;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_UDP;
    cm->cmsg_type = UDP_SEGMENT;
    cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    uint16_t seg = (uint16_t)segment;
    memcpy(CMSG_DATA(cm), &seg, sizeof seg);
    ssize_t n;
    do {
        n = sendmsg(c->loop->fd, &msg, 0);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) {
        c->tx_datagrams += (uint64_t)count;
        c->tx_bytes += len;
        c->tx_calls++;
    }
    if (n < 0 && errno == EIO) {
        /* the device cannot segment: stop using GSO and send them one by one */
        c->loop->gso = false;
        send_batch(c, data, len, segment, count);
    }
}

static void conn_fail(qconn *c, int rv, const char *what) {
    if (c->failed || c->closed) return;
    c->failed = true;
    if (rv == NGTCP2_ERR_CRYPTO) {
        char why[400];
        quic_tls_failure(c->tls, why, sizeof why);
        c->tls_error = true;
        snprintf(c->error, sizeof c->error, "%s", why);
        ngtcp2_connection_close_error_set_transport_error_tls_alert(&c->last_error, ngtcp2_conn_get_tls_alert(c->conn), NULL, 0);
    } else if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING) {
        ngtcp2_connection_close_error ce;
        ngtcp2_conn_get_connection_close_error(c->conn, &ce);
        c->peer_closed = true;
        c->peer_close_code = ce.error_code;
        c->peer_close_app = ce.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION;
        if (!c->handshake_done && ce.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT &&
            (ce.error_code & 0xff00) == 0x0100) {
            c->tls_error = true;
            snprintf(c->error, sizeof c->error,
                     "the server sent TLS alert %u%s%.*s",
                     (unsigned)(ce.error_code & 0xff), ce.reasonlen ? ": " : "", (int)ce.reasonlen,
                     ce.reason ? (const char *)ce.reason : "");
        } else {
            snprintf(c->error, sizeof c->error, "the peer closed the connection (%s error 0x%llx%s%.*s)",
                     c->peer_close_app ? "application" : "transport", (unsigned long long)ce.error_code,
                     ce.reasonlen ? ": " : "", (int)ce.reasonlen, ce.reason ? (const char *)ce.reason : "");
        }
    } else if (rv == NGTCP2_ERR_IDLE_CLOSE) {
        snprintf(c->error, sizeof c->error, "the connection was idle for 30 s and closed");
    } else if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
        snprintf(c->error, sizeof c->error, "the QUIC handshake timed out (no answer from the server)");
    } else {
        snprintf(c->error, sizeof c->error, "%s: %s", what, ngtcp2_strerror(rv));
        ngtcp2_connection_close_error_set_transport_error_liberr(&c->last_error, rv, NULL, 0);
    }
    /* tell the peer, unless it is the one that closed */
    if (rv != NGTCP2_ERR_DRAINING && rv != NGTCP2_ERR_CLOSING && rv != NGTCP2_ERR_IDLE_CLOSE) {
        uint8_t buf[1500];
        ngtcp2_path_storage ps;
        ngtcp2_path_storage_zero(&ps);
        ngtcp2_pkt_info pi;
        ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, &pi, buf, sizeof buf, &c->last_error, now_ns());
        if (n > 0) send_packet(c, buf, (size_t)n);
    }
}

/* Hands the app what the last ngtcp2 call produced: stream data, new streams, closes. */
static void process_ready(qconn *c) {
    qloop *l = c->loop;
    if (c->handshake_done && !c->handshake_reported) {
        c->handshake_reported = true;
        if (l->hooks.on_handshake) l->hooks.on_handshake(c);
    }
    while (c->ready) {
        qstream *s = c->ready;
        c->ready = s->rnext;
        s->in_ready = false;
        if (!s->app && c->is_server && !s->closed && l->hooks.on_new_stream) {
            s->app = l->hooks.on_new_stream(c, s);
            if (!s->app) qs_abort(s, 0);
        }
        if (s->data_pending && s->app) {
            s->data_pending = false;
            l->hooks.on_data(c, s);
        }
        if (s->closed) {
            if (s->app && l->hooks.on_close) l->hooks.on_close(c, s);
            ngtcp2_conn_set_stream_user_data(c->conn, s->id, NULL);
            stream_free(s);
        }
    }
    if (streams_extended) {
        streams_extended = false;
        if (l->hooks.on_streams) l->hooks.on_streams(c);
    }
}

/* ------------------------------------------------------------------ writing packets */

/* Packets of one size waiting for one GSO send: `count` packets, `off` bytes, each `segment`
 * bytes but the last, which may be shorter. */
typedef struct {
    uint8_t *buf;
    size_t off, segment;
    int count;
} gso_batch;

static void batch_flush(qconn *c, gso_batch *b) {
    if (b->count) send_batch(c, b->buf, b->off, b->segment, b->count);
    b->off = 0;
    b->count = 0;
}

/* Takes the packet of `n` bytes just written at the batch's end: packets of one size stay
 * together; a shorter one ends the batch, a longer one starts the next. Sends a full batch. */
static void batch_add(qconn *c, gso_batch *b, size_t n, size_t max) {
    uint8_t *pkt = b->buf + b->off;
    if (b->count == 0) {
        b->segment = n;
        b->off += n;
        b->count = 1;
    } else if (n == b->segment) {
        b->off += n;
        b->count++;
    } else if (n < b->segment) {
        b->off += n;
        b->count++;
        batch_flush(c, b);
    } else {
        send_batch(c, b->buf, b->off, b->segment, b->count);
        memmove(b->buf, pkt, n);
        b->off = n;
        b->segment = n;
        b->count = 1;
    }
    if (b->count == GSO_MAX_SEGMENTS || b->off + max > GSO_MAX_SEGMENTS * 1500) batch_flush(c, b);
}

/* Takes s off the send list; returns the stream after it (NULL when s was the only one). */
static qstream *send_list_unlink(qstream *s) {
    qstream *next = s->snext == s ? NULL : s->snext;
    send_list_remove(s);
    return next;
}

/* The stream to write from, starting at s: asks producers for more as it goes and drops streams
 * with nothing to send from the send list (one lap at most); NULL when none has output. */
static qstream *next_with_output(qconn *c, qstream *s) {
    qloop *l = c->loop;
    size_t visited = 0;
    while (s && visited <= c->n_streams) {
        if (qs_unsent(s) < QS_LOW_WATER && !s->fin_queued && l->hooks.fill && s->app) l->hooks.fill(c, s);
        if (has_output(s)) break;
        qstream *n = send_list_unlink(s);
        s = n ? (n->in_send_list ? n : c->send_head) : c->send_head;
        visited++;
    }
    return s && has_output(s) ? s : NULL;
}

/* What one ngtcp2_conn_writev_stream call is given from a stream (none: control frames only). */
typedef struct {
    ngtcp2_vec v;
    size_t vcnt;
    int64_t sid;
    uint32_t flags;
} stream_piece;

static stream_piece piece_of(qstream *s) {
    stream_piece p = {{NULL, 0}, 0, -1, NGTCP2_WRITE_STREAM_FLAG_MORE};
    if (s) {
        p.sid = s->id;
        p.vcnt = stream_vec(s, &p.v);
        if (s->fin_queued && s->queued - s->sent == p.v.len) p.flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
    }
    return p;
}

static bool piece_ends(const stream_piece *p, ngtcp2_ssize wlen) {
    return (p->flags & NGTCP2_WRITE_STREAM_FLAG_FIN) && (size_t)wlen == p->v.len;
}

/* A negative answer of ngtcp2_conn_writev_stream that concerns only the stream: records it and
 * sets *sp to the stream to go on with. False for an error of the connection. */
static bool stream_write_status(qstream **sp, ngtcp2_ssize n, const stream_piece *p, ngtcp2_ssize wlen) {
    qstream *s = *sp;
    if (n == NGTCP2_ERR_WRITE_MORE) {
        stream_sent(s, (size_t)wlen, piece_ends(p, wlen));
        if (!has_output(s)) *sp = send_list_unlink(s);
        return true;
    }
    if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
        s->blocked = true;
        *sp = send_list_unlink(s);
        return true;
    }
    if (n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND) {
        s->shut = true;
        *sp = send_list_unlink(s);
        return true;
    }
    return false;
}

/* After a packet: records what it carried of s; the next stream in turn (streams take turns). */
static qstream *after_packet(qconn *c, qstream *s, const stream_piece *p, ngtcp2_ssize wlen) {
    if (!s || wlen < 0) return c->send_head;
    stream_sent(s, (size_t)wlen, piece_ends(p, wlen));
    qstream *next = s->snext;
    if (!has_output(s)) send_list_remove(s);
    return next && next->in_send_list ? next : c->send_head;
}

static void conn_write(qconn *c) {
    if (c->closed || c->failed) return;
    size_t max = ngtcp2_conn_get_path_max_tx_udp_payload_size(c->conn);
    static uint8_t batch_buf[GSO_MAX_SEGMENTS * 1500 + 65536];
    gso_batch batch = {batch_buf, 0, 0, 0};
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    uint64_t ts = now_ns();
    qstream *s = c->send_head;
    int packets = 0;
    while (packets < MAX_PACKETS_PER_WRITE) {
        s = next_with_output(c, s);
        stream_piece p = piece_of(s);
        ngtcp2_ssize wlen = -1;
        ngtcp2_ssize n = ngtcp2_conn_writev_stream(c->conn, &ps.path, &pi, batch.buf + batch.off, max, &wlen,
                                                   p.flags, p.sid, p.vcnt ? &p.v : NULL, p.vcnt, ts);
        if (n < 0) {
            if (stream_write_status(&s, n, &p, wlen)) continue;
            batch_flush(c, &batch);
            conn_fail(c, (int)n, "ngtcp2_conn_writev_stream");
            return;
        }
        if (n == 0) break;
        s = after_packet(c, s, &p, wlen);
        packets++;
        c->tx_packets++;
        batch_add(c, &batch, (size_t)n, max);
    }
    batch_flush(c, &batch);
    ngtcp2_conn_update_pkt_tx_time(c->conn, ts);
}

static void conn_unlink(qconn *c) {
    qloop *l = c->loop;
    for (qconn **p = &l->conns; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
}

static void conn_end(qconn *c) {
    if (c->loop->hooks.on_conn_close) c->loop->hooks.on_conn_close(c);
    conn_unlink(c);
    qconn_free(c);
}

void qloop_flush(qloop *l) {
    uint64_t next = 0;
    for (qconn *c = l->conns, *n; c; c = n) {
        n = c->next;
        conn_write(c);
        if (c->failed) {
            conn_end(c);
            continue;
        }
        uint64_t e = ngtcp2_conn_get_expiry(c->conn);
        if (e != UINT64_MAX && (next == 0 || e < next)) next = e;
    }
    arm(l->tfd, next);
}

static qconn *find_conn(qloop *l, const uint8_t *dcid, size_t len) {
    for (qconn *c = l->conns; c; c = c->next)
        for (size_t i = 0; i < c->n_scids; i++)
            if (c->scids[i].datalen == len && memcmp(c->scids[i].data, dcid, len) == 0) return c;
    return NULL;
}

static qconn *conn_alloc(qloop *l, const addr_t *remote) {
    qconn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->loop = l;
    c->local = l->local;
    c->remote = *remote;
    c->path.local.addr = (ngtcp2_sockaddr *)&c->local.ss;
    c->path.local.addrlen = c->local.len;
    c->path.remote.addr = (ngtcp2_sockaddr *)&c->remote.ss;
    c->path.remote.addrlen = c->remote.len;
    c->ref.get_conn = get_conn;
    c->ref.user_data = c;
    ngtcp2_connection_close_error_default(&c->last_error);
    c->cc_recovery_ts = UINT64_MAX;
    return c;
}

static qconn *server_accept(qloop *l, const addr_t *remote, const uint8_t *pkt, size_t len) {
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, pkt, len) != 0) return NULL;
    qconn *c = conn_alloc(l, remote);
    if (!c) return NULL;
    c->is_server = true;
    char err[300];
    if (!quic_tls_server_session(l->cred, &c->ref, &c->tls, err, sizeof err)) {
        diag("%s", err);
        free(c);
        return NULL;
    }
    ngtcp2_cid scid;
    scid.datalen = QUIC_SCID_LEN;
    gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
    c->scids[c->n_scids++] = scid;
    c->scids[c->n_scids++] = hd.dcid; /* the client's first packets still carry it */
    ngtcp2_callbacks cb;
    ngtcp2_settings st;
    ngtcp2_transport_params tp;
    callbacks(&cb, true);
    settings_params(&st, &tp, true);
    tp.original_dcid = hd.dcid;
    int rv = ngtcp2_conn_server_new(&c->conn, &hd.scid, &scid, &c->path, hd.version, &cb, &st, &tp, NULL, c);
    if (rv != 0) {
        diag("ngtcp2_conn_server_new: %s", ngtcp2_strerror(rv));
        gnutls_deinit(c->tls);
        free(c);
        return NULL;
    }
    ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
    ngtcp2_conn_set_keep_alive_timeout(c->conn, QUIC_KEEP_ALIVE_NS);
    c->next = l->conns;
    l->conns = c;
    return c;
}

/* ngtcp2 0.12 counts no congestion events, but each one (a loss, or ECN CE, outside the current
 * recovery period) sets cstat.congestion_recovery_start_ts to the time passed to the call that
 * found it, and only read_pkt and handle_expiry find them: so a new value after one of those
 * calls is one event. Persistent congestion resets the time to UINT64_MAX in the same call as
 * its event, and collapses the window: counted by the window falling while the time is unset
 * (a spurious-loss undo also unsets it, but raises the window). */
static void track_congestion(qconn *c) {
    ngtcp2_conn_stat st;
    ngtcp2_conn_get_conn_stat(c->conn, &st);
    uint64_t ts = st.congestion_recovery_start_ts;
    if (ts != UINT64_MAX && ts != c->cc_recovery_ts) c->cc_events++;
    else if (ts == UINT64_MAX && st.cwnd < c->cc_cwnd) c->cc_events++;
    c->cc_recovery_ts = ts;
    c->cc_cwnd = st.cwnd;
}

void qconn_reading(qconn *c, uint64_t id, treading *out) {
    memset(out, 0, sizeof *out);
    out->id = id;
    out->in_recovery = -1;
    ngtcp2_conn_stat st;
    ngtcp2_conn_get_conn_stat(c->conn, &st);
    treading_set(out, TF_PACKETS_SENT, c->tx_packets);
    treading_set(out, TF_BYTES_SENT, c->tx_bytes);
    treading_set(out, TF_CONGESTION_EVENTS, c->cc_events);
    treading_set(out, TF_CWND, st.cwnd);
    treading_set(out, TF_SRTT, st.smoothed_rtt);
    if (st.min_rtt != UINT64_MAX) treading_set(out, TF_MIN_RTT, st.min_rtt);
    treading_set(out, TF_DELIVERY_RATE, st.delivery_rate_sec * 8);
    treading_set(out, TF_DATAGRAMS_SENT, c->tx_datagrams);
    treading_set(out, TF_SEND_CALLS, c->tx_calls);
}

static void on_readable(qloop *l) {
    uint8_t buf[65536];
    for (int i = 0; i < 256; i++) {
        addr_t from;
        from.len = sizeof from.ss;
        ssize_t n = recvfrom(l->fd, buf, sizeof buf, 0, (struct sockaddr *)&from.ss, &from.len);
        if (n < 0) break;
        qconn *c = NULL;
        if (l->is_server) {
            ngtcp2_version_cid vc;
            int rv = ngtcp2_pkt_decode_version_cid(&vc, buf, (size_t)n, QUIC_SCID_LEN);
            if (rv != 0) continue;
            c = find_conn(l, vc.dcid, vc.dcidlen);
            if (!c) c = server_accept(l, &from, buf, (size_t)n);
        } else {
            c = l->conns;
        }
        if (!c || c->failed) continue;
        ngtcp2_path path = c->path;
        path.remote.addr = (ngtcp2_sockaddr *)&from.ss;
        path.remote.addrlen = from.len;
        ngtcp2_pkt_info pi = {0};
        int rv = ngtcp2_conn_read_pkt(c->conn, &path, &pi, buf, (size_t)n, now_ns());
        if (rv != 0) conn_fail(c, rv, "ngtcp2_conn_read_pkt");
        else if (!l->is_server) track_congestion(c);
        process_ready(c);
        if (c->failed) conn_end(c);
    }
}

static void on_expiry(qloop *l) {
    uint64_t x;
    ssize_t r = read(l->tfd, &x, sizeof x);
    (void)r;
    uint64_t now = now_ns();
    for (qconn *c = l->conns, *n; c; c = n) {
        n = c->next;
        if (ngtcp2_conn_get_expiry(c->conn) <= now) {
            int rv = ngtcp2_conn_handle_expiry(c->conn, now);
            if (rv != 0) conn_fail(c, rv, "ngtcp2_conn_handle_expiry");
            else if (!l->is_server) track_congestion(c);
            process_ready(c);
            if (c->failed) conn_end(c);
        }
    }
}

void qloop_run(qloop *l) {
    while (!l->stop) {
        struct epoll_event evs[8];
        int n = epoll_wait(l->ep, evs, 8, -1);
        if (n < 0 && errno != EINTR) {
            diag("epoll_wait: %s", strerror(errno));
            return;
        }
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == l->fd) on_readable(l);
            else if (fd == l->tfd) on_expiry(l);
            else if (fd == l->pfd) {
                uint64_t x;
                ssize_t r = read(l->pfd, &x, sizeof x);
                (void)r;
                if (l->on_poll) l->on_poll(l);
            } else if (fd == l->afd) {
                uint64_t x;
                ssize_t r = read(l->afd, &x, sizeof x);
                (void)r;
                if (l->app_timer_at && l->on_app_timer) l->on_app_timer(l);
            } else if (fd == l->efd) {
                uint64_t x;
                ssize_t r = read(l->efd, &x, sizeof x);
                (void)r;
                if (l->on_wake) l->on_wake(l);
            }
        }
        qloop_flush(l);
    }
}

/* ------------------------------------------------------------------ connections */

qconn *qconn_client(qloop *l, const addr_t *remote, const char *server_name,
                    gnutls_certificate_credentials_t cred, char *err, size_t errlen) {
    qconn *c = conn_alloc(l, remote);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!quic_tls_client_session(cred, server_name, &c->ref, &c->tls, err, errlen)) {
        free(c);
        return NULL;
    }
    ngtcp2_cid dcid, scid;
    dcid.datalen = NGTCP2_MIN_INITIAL_DCIDLEN;
    scid.datalen = QUIC_SCID_LEN;
    gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen);
    gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
    c->scids[c->n_scids++] = scid;
    ngtcp2_callbacks cb;
    ngtcp2_settings st;
    ngtcp2_transport_params tp;
    callbacks(&cb, false);
    settings_params(&st, &tp, false);
    int rv = ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &c->path, NGTCP2_PROTO_VER_V1, &cb, &st, &tp, NULL, c);
    if (rv != 0) {
        snprintf(err, errlen, "ngtcp2_conn_client_new: %s", ngtcp2_strerror(rv));
        gnutls_deinit(c->tls);
        free(c);
        return NULL;
    }
    ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
    ngtcp2_conn_set_keep_alive_timeout(c->conn, QUIC_KEEP_ALIVE_NS);
    c->next = l->conns;
    l->conns = c;
    return c;
}

void qconn_close(qconn *c, const char *reason) {
    if (c->closed || c->failed) return;
    c->closed = true;
    ngtcp2_connection_close_error ce;
    ngtcp2_connection_close_error_set_application_error(&ce, 0, (const uint8_t *)reason, strlen(reason));
    uint8_t buf[1500];
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, &pi, buf, sizeof buf, &ce, now_ns());
    if (n > 0) send_packet(c, buf, (size_t)n);
}

void qconn_free(qconn *c) {
    /* streams still known to ngtcp2 are freed with their app state by the caller's hooks */
    if (c->conn) ngtcp2_conn_del(c->conn);
    if (c->tls) gnutls_deinit(c->tls);
    free(c);
}

qstream *qstream_open(qconn *c, void *app) {
    int64_t id;
    int rv = ngtcp2_conn_open_bidi_stream(c->conn, &id, NULL);
    if (rv != 0) return NULL;
    qstream *s = stream_new(c, id);
    if (!s) return NULL;
    s->app = app;
    ngtcp2_conn_set_stream_user_data(c->conn, id, s);
    return s;
}
