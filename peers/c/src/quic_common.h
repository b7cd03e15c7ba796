/* The quic stack's transport on ngtcp2 0.12 with our own event loop (epoll + timerfd + eventfd),
 * shared by client and server: UDP sockets (8 MiB buffers), connections with the transport
 * parameters of docs/stacks.md, and per-stream send and receive buffers.
 *
 * Threading: one loop thread owns the socket, every connection and every stream. Other threads
 * talk to it only through qloop_wake (an eventfd) and their own locked mailboxes.
 *
 * Streams: ngtcp2 does not copy stream data; what it sent must stay where it is until it is
 * acknowledged. So a stream's outgoing bytes live in a list of chunks that never move; a chunk
 * is freed when every byte in it is acknowledged. A stream's producer (hooks.fill) is asked for
 * more whenever fewer than QS_LOW_WATER bytes wait to be sent, which is how a writer "flushes
 * every 32 KiB" (docs/stacks.md "tcp"/"quic" write batching) and how large streams stay bounded
 * in memory. */
#ifndef RPCARENA_QUIC_COMMON_H
#define RPCARENA_QUIC_COMMON_H

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <stdbool.h>
#include <stdint.h>

#include "netutil.h"
#include "transport.h"
#include "util.h"

#define QS_LOW_WATER (32 * 1024)
#define QUIC_IDLE_TIMEOUT_NS (30ULL * NS_PER_SEC)
#define QUIC_KEEP_ALIVE_NS (10ULL * NS_PER_SEC)
#define QUIC_SCID_LEN 18
#define QUIC_MAX_SCIDS 8

typedef struct qchunk {
    struct qchunk *next;
    size_t len, cap;
    uint8_t data[];
} qchunk;

struct qconn;
struct qloop;

typedef struct qstream {
    int64_t id;
    struct qconn *c;
    /* sending */
    qchunk *head, *tail, *cur; /* cur: the chunk holding the next unsent byte */
    size_t cur_off;
    uint64_t queued, sent, acked, head_base;
    bool fin_queued, fin_sent, shut;
    bool blocked, in_send_list;
    struct qstream *snext, *sprev;
    /* receiving */
    buf_t rbuf;
    bool fin_received, reset_received, closed;
    uint64_t reset_code;
    bool in_ready, data_pending;
    struct qstream *rnext;
    void *app;
} qstream;

typedef struct {
    /* data or FIN arrived, or the stream was reset (s->reset_received) */
    void (*on_data)(struct qconn *c, qstream *s);
    /* ngtcp2 is done with the stream; the hook must release s->app (qstream is freed after) */
    void (*on_close)(struct qconn *c, qstream *s);
    /* fewer than QS_LOW_WATER bytes wait: append more if there is more */
    void (*fill)(struct qconn *c, qstream *s);
    /* the peer allows more streams */
    void (*on_streams)(struct qconn *c);
    /* the handshake completed */
    void (*on_handshake)(struct qconn *c);
    /* server: the client opened a stream; returns the app state (or NULL to refuse it) */
    void *(*on_new_stream)(struct qconn *c, qstream *s);
    /* the connection closed (error or peer close); c is freed after */
    void (*on_conn_close)(struct qconn *c);
} qhooks;

typedef struct qconn {
    struct qloop *loop;
    ngtcp2_conn *conn;
    ngtcp2_crypto_conn_ref ref;
    gnutls_session_t tls;
    addr_t local, remote;
    ngtcp2_path path;
    bool is_server, handshake_done, handshake_reported, closed, failed;
    bool peer_closed;      /* the peer sent CONNECTION_CLOSE */
    uint64_t peer_close_code; /* its error code */
    bool peer_close_app;
    char error[512];       /* why the connection failed */
    bool tls_error;
    ngtcp2_connection_close_error last_error;
    ngtcp2_cid scids[QUIC_MAX_SCIDS];
    size_t n_scids;
    qstream *send_head; /* streams with bytes or FIN to send */
    qstream *ready;     /* streams with events for the app */
    size_t n_streams;
    struct qconn *next; /* the loop's list */
    void *app;
    /* transport statistics (client; loop thread): packets ngtcp2 wrote, datagrams, bytes and
     * send calls the kernel took, congestion events seen in ngtcp2's recovery start time */
    uint64_t tx_packets, tx_datagrams, tx_bytes, tx_calls;
    uint64_t cc_events, cc_recovery_ts, cc_cwnd;
} qconn;

typedef struct qloop {
    int ep, fd, tfd, afd, efd;
    addr_t local;
    qconn *conns;
    qhooks hooks;
    bool stop;
    bool is_server;
    int udp_buffer;
    bool gso; /* UDP_SEGMENT works on this socket */
    uint64_t app_timer_at; /* 0: off */
    void (*on_app_timer)(struct qloop *l);
    int pfd; /* the periodic poll timer (transport statistics) */
    void (*on_poll)(struct qloop *l);
    void (*on_wake)(struct qloop *l);
    /* server only: credentials for new sessions */
    gnutls_certificate_credentials_t cred;
    void *app;
} qloop;

/* Creates the loop and its UDP socket bound to `bind` (port 0: any). */
bool qloop_init(qloop *l, const addr_t *bind, bool is_server, char *err, size_t errlen);
/* Runs until l->stop is set (by a hook). */
void qloop_run(qloop *l);
/* Wakes the loop from another thread: on_wake runs on the loop thread. */
void qloop_wake(qloop *l);
/* Arms the application timer (absolute monotonic ns; 0 disarms). */
void qloop_set_app_timer(qloop *l, uint64_t at);
/* Arms the periodic poll timer: on_poll every interval_ns from now (0 disarms). */
void qloop_set_poll(qloop *l, uint64_t interval_ns);
/* Writes what every connection has to send and re-arms the timer. */
void qloop_flush(qloop *l);

/* Client: creates the connection and sends the first flight. */
qconn *qconn_client(qloop *l, const addr_t *remote, const char *server_name,
                    gnutls_certificate_credentials_t cred, char *err, size_t errlen);
/* Closes with an application CONNECTION_CLOSE (code 0 and `reason`), sends it. */
void qconn_close(qconn *c, const char *reason);
void qconn_free(qconn *c);
/* The connection's transport statistics now (loop thread), as reading `id`. */
void qconn_reading(qconn *c, uint64_t id, treading *out);

/* Opens a bidirectional stream; NULL when the peer's stream credit is used up. */
qstream *qstream_open(qconn *c, void *app);
/* Room for n contiguous bytes at the end of the stream's send data; then qs_commit(n). */
uint8_t *qs_reserve(qstream *s, size_t n);
void qs_commit(qstream *s, size_t n);
bool qs_append(qstream *s, const void *data, size_t n);
/* No more data after what is queued: FIN. */
void qs_finish(qstream *s);
/* Resets and stops the stream (both directions) with an application error code. */
void qs_abort(qstream *s, uint64_t code);
/* Bytes queued but not yet taken by ngtcp2. */
static inline uint64_t qs_unsent(const qstream *s) { return s->queued - s->sent; }

#endif
