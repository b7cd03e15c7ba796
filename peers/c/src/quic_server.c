/* The quic stack's server: every client-opened bidirectional stream carries one call in the
 * native framing (docs/stacks.md "Native framing", "Server errors"). One event loop thread
 * serves every connection; each request is validated and a bad call is answered with
 * INVALID_ARGUMENT (3) or UNIMPLEMENTED (12) once the client's END has arrived; broken framing
 * is answered with STATUS 3 and the stream is closed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "control.h"
#include "framing.h"
#include "quic_common.h"
#include "quic_tls.h"
#include "server.h"
#include "workload.h"

#define STATUS_OK 0
#define STATUS_INVALID_ARGUMENT 3
#define STATUS_UNIMPLEMENTED 12
#define STATUS_INTERNAL 13

typedef struct {
    qstream *s;
    int method; /* shape, -1 unknown, -2 before HEADER */
    serve_t v;
    structured_t scratch;
    bool end_seen, rejected, broken, replied;
    uint32_t reject_code;
    char why[400];
    uint64_t stream_next, stream_total;
} scall;

static qloop loop;
/* Bumped by the loop thread, read by the stdin thread for the window events. */
static atomic_ullong c_rpcs, c_requests, c_responses, c_rejected;
static atomic_bool stop_requested;
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv;
static bool loop_done;

static void read_counters(server_counters *out) {
    out->rpcs = atomic_load_explicit(&c_rpcs, memory_order_relaxed);
    out->requests = atomic_load_explicit(&c_requests, memory_order_relaxed);
    out->responses = atomic_load_explicit(&c_responses, memory_order_relaxed);
    out->rejected = atomic_load_explicit(&c_rejected, memory_order_relaxed);
    out->first_rejection = server_first_rejection();
}

static void put_status(scall *c, uint32_t code, const char *message) {
    if (c->replied) return;
    c->replied = true;
    buf_t b = {0};
    if (frame_append_status(&b, code, message)) qs_append(c->s, b.data, b.len);
    buf_free(&b);
    qs_finish(c->s);
    if (code != STATUS_OK) {
        count_one(&c_rejected);
        diag("rejected a call with status %u: %s", code, message);
        server_note_rejection("status %u on a quic call: %s", code, message);
    }
}

static bool put_response(scall *c, uint64_t seq) {
    pb_response r;
    if (!build_response(&c->scratch, c->v.kind, seq, c->v.response_size, &r)) return false;
    size_t n = response_size_of(&r);
    uint8_t *p = qs_reserve(c->s, FRAME_PREFIX + n);
    if (!p) return false;
    frame_prefix(p, FT_MESSAGE, (uint32_t)n);
    pack_response(&r, p + FRAME_PREFIX);
    qs_commit(c->s, FRAME_PREFIX + n);
    count_one(&c_responses);
    return true;
}

static void reject(scall *c, uint32_t code, const char *why) {
    if (c->rejected) return;
    c->rejected = true;
    c->reject_code = code;
    snprintf(c->why, sizeof c->why, "%s", why);
}

/* Broken framing: STATUS 3 where possible, then the stream is done. */
static void broken(scall *c, const char *why) {
    c->broken = true;
    put_status(c, STATUS_INVALID_ARGUMENT, why);
}

/* Server-stream responses as the transport takes them, then STATUS OK. */
static void fill(qconn *conn, qstream *s) {
    (void)conn;
    scall *c = s->app;
    if (!c || c->replied || c->method != SHAPE_SERVER_STREAM || !c->end_seen || c->rejected) return;
    while (c->stream_next < c->stream_total && qs_unsent(s) < QS_LOW_WATER) {
        if (!put_response(c, c->stream_next)) {
            put_status(c, STATUS_INTERNAL, "cannot build a response");
            return;
        }
        c->stream_next++;
    }
    if (c->stream_next == c->stream_total) put_status(c, STATUS_OK, "");
}

static void on_end(scall *c) {
    c->end_seen = true;
    char why[400];
    if (!c->rejected && !serve_on_end(&c->v, why, sizeof why)) reject(c, STATUS_INVALID_ARGUMENT, why);
    if (c->rejected) {
        put_status(c, c->reject_code, c->why);
        return;
    }
    switch (c->method) {
    case SHAPE_UNARY:
        if (!put_response(c, c->v.first_seq)) put_status(c, STATUS_INTERNAL, "cannot build the response");
        else put_status(c, STATUS_OK, "");
        break;
    case SHAPE_SERVER_STREAM:
        c->stream_total = c->v.response_messages;
        c->stream_next = 0;
        fill(NULL, c->s);
        break;
    case SHAPE_CLIENT_STREAM: {
        pb_summary sum;
        if (!build_summary(&c->v, &c->scratch, &sum)) {
            put_status(c, STATUS_INTERNAL, "cannot build the summary");
            break;
        }
        size_t n = summary_size_of(&sum);
        uint8_t *p = qs_reserve(c->s, FRAME_PREFIX + n);
        if (!p) {
            put_status(c, STATUS_INTERNAL, "out of memory");
            break;
        }
        frame_prefix(p, FT_MESSAGE, (uint32_t)n);
        pack_summary(&sum, p + FRAME_PREFIX);
        qs_commit(c->s, FRAME_PREFIX + n);
        count_one(&c_responses);
        put_status(c, STATUS_OK, "");
        break;
    }
    case SHAPE_BIDI:
        put_status(c, STATUS_OK, "");
        break;
    }
}

static void on_message(scall *c, const frame_t *f) {
    count_one(&c_requests);
    if (c->rejected) return;
    if ((c->method == SHAPE_UNARY || c->method == SHAPE_SERVER_STREAM) && c->v.received >= 1) {
        char why[120];
        snprintf(why, sizeof why, "a %s call carries exactly one request, got more", shape_name((shape_kind)c->method));
        reject(c, STATUS_INVALID_ARGUMENT, why);
        return;
    }
    pb_request *req = NULL;
    char why[400];
    if (!serve_on_request(&c->v, f->body, f->len, &req, why, sizeof why)) {
        reject(c, STATUS_INVALID_ARGUMENT, why);
        return;
    }
    uint64_t seq = req->seq;
    pb_request_free(req);
    /* bidi: answer each request as it arrives */
    if (c->method == SHAPE_BIDI && !put_response(c, seq)) reject(c, STATUS_INTERNAL, "cannot build a response");
}

static void on_data(qconn *conn, qstream *s) {
    (void)conn;
    scall *c = s->app;
    if (!c) return;
    if (s->reset_received) {
        qs_abort(s, 0);
        return;
    }
    if (c->replied) { /* answered: what else arrives is dropped */
        buf_consume(&s->rbuf, buf_avail(&s->rbuf));
        return;
    }
    while (!c->broken && !c->replied) {
        frame_t f;
        size_t used;
        char why[300];
        frame_result r = frame_parse(buf_head(&s->rbuf), buf_avail(&s->rbuf), &f, &used, why, sizeof why);
        if (r == FR_ERROR) {
            broken(c, why);
            break;
        }
        if (r == FR_MORE) break;
        if (c->method == -2) {
            if (f.type != FT_HEADER) {
                snprintf(why, sizeof why, "a call must start with a HEADER frame, not %s", frame_name(f.type));
                broken(c, why);
                break;
            }
            c->method = shape_of_path(f.body, f.len);
            if (c->method == SHAPE_SEND) c->method = -1; /* the native framing has no Command */
            if (c->method < 0) {
                snprintf(why, sizeof why, "unknown method %.*s", (int)(f.len > 200 ? 200 : f.len), (const char *)f.body);
                reject(c, STATUS_UNIMPLEMENTED, why);
            } else {
                serve_init(&c->v, (shape_kind)c->method);
            }
        } else if (c->end_seen) {
            broken(c, "a frame after END");
            break;
        } else if (f.type == FT_MESSAGE) {
            on_message(c, &f);
        } else if (f.type == FT_END) {
            buf_consume(&s->rbuf, used);
            on_end(c);
            continue;
        } else {
            snprintf(why, sizeof why, "unexpected %s frame in a call", frame_name(f.type));
            broken(c, why);
            break;
        }
        buf_consume(&s->rbuf, used);
    }
    if (s->fin_received && !c->end_seen && !c->replied) {
        /* A stream that ends before its first byte carries no call (the Rust backpressure
         * submitter opens one, finds the deadline passed and finishes it): not a rejection. */
        if (buf_avail(&s->rbuf)) broken(c, "the stream ended inside a frame");
        else qs_finish(s); /* no call, or the client hung up mid-call: nothing to answer */
        c->replied = true;
    }
}

static void *on_new_stream(qconn *conn, qstream *s) {
    (void)conn;
    if (s->id & 0x3) return NULL; /* only client-initiated bidirectional streams carry calls */
    scall *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->s = s;
    c->method = -2;
    count_one(&c_rpcs);
    return c;
}

static void on_close(qconn *conn, qstream *s) {
    (void)conn;
    scall *c = s->app;
    s->app = NULL;
    if (!c) return;
    structured_free(&c->scratch);
    free(c);
}

static void on_wake(qloop *l) {
    if (!atomic_load(&stop_requested)) return;
    for (qconn *c = l->conns; c; c = c->next) qconn_close(c, "shutdown");
    l->stop = true;
}

static void *loop_main(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "quic-server", 0, 0, 0);
    qloop_run(&loop);
    pthread_mutex_lock(&done_mu);
    loop_done = true;
    pthread_cond_broadcast(&done_cv);
    pthread_mutex_unlock(&done_mu);
    return NULL;
}

void quic_server_main(const server_args *a, const char *cert_pem, const char *key_pem) {
    char err[400], text[ARG_TEXT];
    addr_t addr;
    if (!resolve_host_port(a->listen, &addr, err, sizeof err))
        out_error_exit(PH_LISTEN, CODE_CONFIG, "--listen %s: %s", a->listen, err);
    if (!qloop_init(&loop, &addr, true, err, sizeof err))
        out_error_exit(PH_LISTEN, CODE_CONFIG, "--listen %s: %s", a->listen, err);
    if (!quic_tls_server_credentials(cert_pem, key_pem, &loop.cred, err, sizeof err))
        out_error_exit(PH_STARTUP, CODE_CONFIG, "--cert %s / --key %s: %s", a->cert, a->key, err);
    loop.hooks.on_data = on_data;
    loop.hooks.on_close = on_close;
    loop.hooks.fill = fill;
    loop.hooks.on_new_stream = on_new_stream;
    loop.on_wake = on_wake;
    cond_init_monotonic(&done_cv);
    pthread_t t;
    if (pthread_create(&t, NULL, loop_main, NULL) != 0)
        out_error_exit(PH_LISTEN, CODE_INTERNAL, "cannot start the QUIC loop thread");
    addr_format(&loop.local, text, sizeof text);
    server_ready(text, read_counters);

    (void)control_wait(NULL); /* SHUTDOWN or end of stdin */
    atomic_store(&stop_requested, true);
    qloop_wake(&loop);
    uint64_t deadline = now_ns() + 2 * NS_PER_SEC;
    pthread_mutex_lock(&done_mu);
    int rc = 0;
    while (!loop_done && rc == 0) rc = cond_wait_until(&done_cv, &done_mu, deadline);
    pthread_mutex_unlock(&done_mu);
    /* calls still open count what they did so far (the loop has stopped, or is stuck) */
    server_stopped(read_counters);
}
