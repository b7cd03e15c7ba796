/* The quic stack's client: one QUIC connection on ngtcp2, one bidirectional stream per
 * operation carrying the native framing (docs/stacks.md "Native framing"), every load model
 * run on the connection's event loop thread. The control thread (client.c) hands it a phase
 * and waits; the loop runs the phase and hands back the tally. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "client.h"
#include "framing.h"
#include "quic_common.h"
#include "quic_tls.h"

#define CONNECT_BOUND_NS (30ULL * NS_PER_SEC)
/* The open model wakes this long before an intended start and spins the rest. */
#define OPEN_LEAD_NS 60000ULL

struct qclient;

typedef struct qop {
    struct qclient *cl;
    qstream *s;
    call_t core;
    structured_t own_scratch;
    uint64_t intended, start, seq;
    uint32_t lane, lane_ops;
    bool dynamic;
    bool header_sent, end_queued, status_seen, done, failed, waiting;
    failure_t fail;
    struct qop *next, *prev; /* in flight, or waiting for stream credit */
    /* send-saturation */
    bool saturating, summary_seen;
    uint64_t msg_start, sat_sent, sat_response_bytes;
    uint64_t *sat_starts, *sat_lat;
    size_t sat_cap;
} qop;

enum { CMD_NONE, CMD_RUN, CMD_CLOSE };

typedef struct qclient {
    const client_args *a;
    const workload_t *w;
    gnutls_certificate_credentials_t cred;
    addr_t remote, local;
    qloop loop;
    qconn *c;
    pthread_t thread;
    bool thread_started;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    int cmd;
    bool connected, conn_failed, phase_done, closed;
    failure_t conn_failure;
    char conn_error[512];

    /* the phase (loop thread only) */
    const phase_t *ph;
    tally_t *out;
    bool running;
    qop *lanes;
    uint32_t n_lanes, lanes_active;
    qop inflight, waitq; /* list sentinels */
    uint64_t in_flight, max_in_flight, next_seq;
    bool stop_starting;
    /* open */
    schedule_t sched;
    uint64_t next_intended;
    bool generating;
    uint64_t *due;
    size_t due_head, due_tail, due_cap;
    structured_t scratch; /* shared by dynamic ops: the loop is one thread */
    /* transport statistics of the measured window (loop thread; read by the control thread
     * after phase_done) */
    bool tracking;
    tracker_t tracker;
    tstats stats;
} qclient;

static void op_begin(qop *op);
static void check_phase_done(qclient *cl);

/* ------------------------------------------------------------------ lists */

static void list_init(qop *head) { head->next = head->prev = head; }
static bool list_empty(const qop *head) { return head->next == head; }
static void list_push(qop *head, qop *op) {
    op->prev = head->prev;
    op->next = head;
    head->prev->next = op;
    head->prev = op;
}
static void list_del(qop *op) {
    if (!op->next) return;
    op->prev->next = op->next;
    op->next->prev = op->prev;
    op->next = op->prev = NULL;
}

/* ------------------------------------------------------------------ sending */

static bool put_frame(qstream *s, uint8_t type, const uint8_t *body, uint32_t len) {
    uint8_t *p = qs_reserve(s, FRAME_PREFIX + (size_t)len);
    if (!p) return false;
    frame_prefix(p, type, len);
    if (len) memcpy(p + FRAME_PREFIX, body, len);
    qs_commit(s, FRAME_PREFIX + (size_t)len);
    return true;
}

static structured_t *scratch_of(qop *op) { return op->dynamic ? &op->cl->scratch : &op->own_scratch; }

static bool put_request(qop *op) {
    pb_request req;
    if (!call_next_request(&op->core, scratch_of(op), &req)) return false;
    size_t n = request_size_of(&req);
    uint8_t *p = qs_reserve(op->s, FRAME_PREFIX + n);
    if (!p) return false;
    frame_prefix(p, FT_MESSAGE, (uint32_t)n);
    pack_request(&req, p + FRAME_PREFIX);
    qs_commit(op->s, FRAME_PREFIX + n);
    return true;
}

static void fail_op(qop *op, fail_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void op_done(qop *op, uint64_t end);

static void fail_op(qop *op, fail_code code, const char *fmt, ...) {
    if (op->done) return;
    if (!op->failed) {
        va_list ap;
        va_start(ap, fmt);
        char msg[700];
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fail_set(&op->fail, code, "%s", msg);
        op->failed = true;
    }
    if (op->s) {
        qs_abort(op->s, 0x101);
        op->s->app = NULL;
        op->s = NULL;
    }
    op_done(op, now_ns());
}

/* The stream's producer: HEADER, requests (built as the transport takes them), END, FIN. */
static void fill(qconn *c, qstream *s) {
    (void)c;
    qop *op = s->app;
    if (!op || op->done || op->end_queued) return;
    if (!op->header_sent) {
        const char *path = method_path(op->cl->w->shape);
        if (!put_frame(s, FT_HEADER, (const uint8_t *)path, (uint32_t)strlen(path))) goto oom;
        op->header_sent = true;
    }
    if (op->saturating) {
        uint64_t deadline = op->cl->ph->deadline;
        while (qs_unsent(s) < QS_LOW_WATER) {
            uint64_t now = now_ns();
            if (now >= deadline) break;
            if (!put_request(op)) goto oom;
            if (op->sat_sent == op->sat_cap) {
                size_t cap = op->sat_cap ? op->sat_cap * 2 : 1024;
                uint64_t *a = realloc(op->sat_starts, cap * sizeof *a), *b = a ? realloc(op->sat_lat, cap * sizeof *b) : NULL;
                if (a) op->sat_starts = a;
                if (b) op->sat_lat = b;
                if (!a || !b) goto oom;
                op->sat_cap = cap;
            }
            uint64_t accepted = now_ns();
            op->sat_starts[op->sat_sent] = op->msg_start;
            op->sat_lat[op->sat_sent] = accepted - op->msg_start;
            op->sat_sent++;
            op->msg_start = accepted;
        }
        if (now_ns() < deadline) return;
    } else {
        while (op->core.sent < op->core.n_req && qs_unsent(s) < QS_LOW_WATER)
            if (!put_request(op)) goto oom;
        if (op->core.sent < op->core.n_req) return;
    }
    if (!put_frame(s, FT_END, NULL, 0)) goto oom;
    op->end_queued = true;
    qs_finish(s);
    return;
oom:
    fail_op(op, CODE_INTERNAL, "out of memory building requests");
}

/* ------------------------------------------------------------------ receiving */

static void on_frame(qop *op, const frame_t *f) {
    char why[300];
    if (op->status_seen) {
        fail_op(op, CODE_INVALID, "the server sent a %s frame after STATUS", frame_name(f->type));
        return;
    }
    if (f->type == FT_MESSAGE) {
        if (op->saturating) {
            if (op->summary_seen) {
                fail_op(op, CODE_INVALID, "the server sent more than one summary");
                return;
            }
            if (!op->end_queued) {
                fail_op(op, CODE_INVALID, "the server sent a summary before the stream ended");
                return;
            }
            if (!check_stream_summary(op->cl->w, op->sat_sent, f->body, f->len, &op->sat_response_bytes, &op->fail)) {
                op->failed = true;
                fail_op(op, CODE_INVALID, "%s", op->fail.msg);
                return;
            }
            op->summary_seen = true;
        } else if (!call_on_message(&op->core, f->body, f->len, &op->fail)) {
            op->failed = true;
            fail_op(op, op->fail.code, "%s", op->fail.msg);
        }
        return;
    }
    if (f->type == FT_STATUS) {
        uint32_t code;
        char msg[400];
        if (!status_decode(f->body, f->len, &code, msg, sizeof msg)) {
            fail_op(op, CODE_INVALID, "undecodable STATUS frame");
            return;
        }
        op->status_seen = true;
        if (code != 0) {
            fail_op(op, CODE_RPC, "the server ended the call with status %u: %s", code, msg);
            return;
        }
        if (op->saturating) {
            if (!op->summary_seen) fail_op(op, CODE_INVALID, "the server ended the call with STATUS OK but no summary");
        } else if (!call_on_status_ok(&op->core, &op->fail)) {
            op->failed = true;
            fail_op(op, CODE_INVALID, "%s", op->fail.msg);
        }
        return;
    }
    snprintf(why, sizeof why, "the server sent an unexpected %s frame", frame_name(f->type));
    fail_op(op, CODE_INVALID, "%s", why);
}

static void on_data(qconn *c, qstream *s) {
    (void)c;
    qop *op = s->app;
    if (!op || op->done) return;
    for (;;) {
        frame_t f;
        size_t used;
        char why[300];
        frame_result r = frame_parse(buf_head(&s->rbuf), buf_avail(&s->rbuf), &f, &used, why, sizeof why);
        if (r == FR_ERROR) {
            fail_op(op, CODE_INVALID, "malformed frame from the server: %s", why);
            return;
        }
        if (r == FR_MORE) break;
        on_frame(op, &f);
        if (s->app != op) return; /* the operation failed (and may be gone) */
        buf_consume(&s->rbuf, used);
    }
    if (s->reset_received) {
        fail_op(op, CODE_CONNECT, "the server reset the stream (error %llu) before STATUS",
                (unsigned long long)s->reset_code);
        return;
    }
    if (s->fin_received) {
        if (buf_avail(&s->rbuf)) {
            fail_op(op, CODE_INVALID, "the stream ended inside a frame (truncated)");
        } else if (!op->status_seen) {
            fail_op(op, CODE_CONNECT, "the server closed the stream before sending STATUS");
        } else {
            /* STATUS OK and the server's FIN: the call is complete */
            s->app = NULL;
            op->s = NULL;
            op_done(op, now_ns());
        }
    }
}

static void on_close(qconn *c, qstream *s) {
    (void)c;
    qop *op = s->app;
    s->app = NULL;
    if (op && !op->done) {
        op->s = NULL;
        fail_op(op, CODE_CONNECT, "the stream closed before STATUS");
    }
}

/* ------------------------------------------------------------------ operations */

static qop *new_dynamic(qclient *cl) {
    qop *op = calloc(1, sizeof *op);
    if (!op) {
        diag("out of memory for an operation");
        abort();
    }
    op->cl = cl;
    op->dynamic = true;
    op->seq = cl->next_seq++;
    return op;
}

static void op_reset(qop *op) {
    qclient *cl = op->cl;
    call_init(&op->core, cl->w, op->seq);
    op->s = NULL;
    op->header_sent = op->end_queued = op->status_seen = op->done = op->failed = op->waiting = false;
    op->summary_seen = false;
    fail_clear(&op->fail);
    op->saturating = cl->ph->load == LOAD_SEND_SATURATION && cl->ph->kind != RUN_VALIDATE;
    op->sat_sent = op->sat_response_bytes = 0;
}

/* Starts an operation whose start time is set: opens its stream (or waits for credit). */
static void op_begin(qop *op) {
    qclient *cl = op->cl;
    op_reset(op);
    cl->in_flight++;
    if (cl->in_flight > cl->max_in_flight) cl->max_in_flight = cl->in_flight;
    if (!cl->c) {
        list_push(&cl->inflight, op);
        fail_op(op, CODE_CONNECT, "the connection is closed: %s", cl->conn_error);
        return;
    }
    qstream *s = qstream_open(cl->c, op);
    if (!s) {
        op->waiting = true;
        list_push(&cl->waitq, op);
        return;
    }
    op->s = s;
    op->msg_start = now_ns();
    list_push(&cl->inflight, op);
    fill(cl->c, s);
}

static void start_lane(qclient *cl, qop *op, uint64_t now) {
    op->seq = op->lane + (uint64_t)op->lane_ops * cl->n_lanes;
    op->lane_ops++;
    op->intended = op->start = now;
    op_begin(op);
}

static void bp_pump(qclient *cl);
static void open_start_due(qclient *cl);

static void op_done(qop *op, uint64_t end) {
    qclient *cl = op->cl;
    const phase_t *p = cl->ph;
    if (op->done) return;
    op->done = true;
    list_del(op);
    cl->in_flight--;
    const workload_t *w = cl->w;
    uint64_t sent = op->saturating ? op->sat_sent : op->core.n_req;
    op_record r = {op->failed, &op->fail, op->intended, op->start, end, op->core.n_req, op->core.n_resp,
                   sent * w->request_size,
                   op->saturating ? op->sat_response_bytes : op->core.response_bytes,
                   op->saturating, op->sat_sent, op->sat_starts, op->sat_lat};
    tally_operation(cl->out, p, &r);
    if (!op->dynamic) {
        uint64_t now = now_ns();
        if (!op->failed && !op->saturating && p->kind != RUN_VALIDATE && now < p->deadline && cl->running) {
            start_lane(cl, op, now);
        } else {
            cl->lanes_active--;
        }
    } else {
        bool failed = op->failed;
        free(op->sat_starts);
        free(op->sat_lat);
        free(op);
        if (p->load == LOAD_BACKPRESSURE) {
            if (failed) cl->stop_starting = true;
            bp_pump(cl);
        } else if (p->load == LOAD_OPEN) {
            open_start_due(cl);
        }
    }
    check_phase_done(cl);
}

/* ------------------------------------------------------------------ models */

/* Backpressure: a new operation whenever a stream can be opened (the server's stream credit),
 * up to --max-in-flight, until the deadline or the first failure. */
static void bp_pump(qclient *cl) {
    const phase_t *p = cl->ph;
    while (cl->running && !cl->stop_starting && cl->c && cl->in_flight < cl->a->max_in_flight) {
        uint64_t now = now_ns();
        if (now >= p->deadline) return;
        if (ngtcp2_conn_get_streams_bidi_left(cl->c->conn) == 0) return; /* on_streams resumes */
        qop *op = new_dynamic(cl);
        op->intended = op->start = now;
        op_begin(op);
    }
}

static bool due_push(qclient *cl, uint64_t intended) {
    if (cl->due_tail == cl->due_cap) {
        if (cl->due_head) {
            memmove(cl->due, cl->due + cl->due_head, (cl->due_tail - cl->due_head) * sizeof *cl->due);
            cl->due_tail -= cl->due_head;
            cl->due_head = 0;
        } else {
            size_t cap = cl->due_cap ? cl->due_cap * 2 : 256;
            uint64_t *d = realloc(cl->due, cap * sizeof *d);
            if (!d) return false;
            cl->due = d;
            cl->due_cap = cap;
        }
    }
    cl->due[cl->due_tail++] = intended;
    return true;
}

static void open_start(qclient *cl, uint64_t intended) {
    uint64_t start = now_ns();
    hist_record(cl->out->lag, start - intended);
    qop *op = new_dynamic(cl);
    op->intended = intended;
    op->start = start;
    op_begin(op);
}

/* Starts intended starts that waited for a free slot, in order, while slots are free. */
static void open_start_due(qclient *cl) {
    while (cl->due_head < cl->due_tail && cl->in_flight < cl->a->concurrency && cl->running) {
        if (now_ns() >= cl->ph->deadline) {
            cl->due_head = cl->due_tail = 0; /* still waiting at the deadline: not started */
            return;
        }
        open_start(cl, cl->due[cl->due_head++]);
    }
}

static void arm_timer(qclient *cl) {
    const phase_t *p = cl->ph;
    if (!cl->running) {
        qloop_set_app_timer(&cl->loop, 0);
        return;
    }
    uint64_t at = p->drain_end;
    if (now_ns() < p->deadline && p->deadline < at) at = p->deadline; /* END, dropped starts, the submitter */
    if (cl->generating) {
        uint64_t wake = cl->next_intended > OPEN_LEAD_NS ? cl->next_intended - OPEN_LEAD_NS : 1;
        if (wake < at) at = wake;
    }
    qloop_set_app_timer(&cl->loop, at);
}

static void open_tick(qclient *cl) {
    const phase_t *p = cl->ph;
    while (cl->generating) {
        uint64_t now = now_ns();
        if (cl->next_intended > now + OPEN_LEAD_NS) break;
        while (now_ns() < cl->next_intended) __builtin_ia32_pause();
        uint64_t intended = cl->next_intended;
        if (cl->in_flight < cl->a->concurrency && cl->due_head == cl->due_tail) open_start(cl, intended);
        else due_push(cl, intended);
        cl->next_intended = schedule_next(&cl->sched);
        if (cl->next_intended >= p->deadline) cl->generating = false;
        else cl->out->offered++;
    }
}

/* Operations still waiting for stream credit join those in flight (to be failed with them). */
static void absorb_waiting(qclient *cl) {
    while (!list_empty(&cl->waitq)) {
        qop *op = cl->waitq.next;
        list_del(op);
        list_push(&cl->inflight, op);
    }
}

static void cancel_late(qclient *cl) {
    failure_t f;
    fail_set(&f, CODE_TIMEOUT, "the operation did not finish within the drain bound");
    absorb_waiting(cl);
    while (!list_empty(&cl->inflight)) {
        qop *op = cl->inflight.next;
        op->failed = true;
        op->fail = f;
        if (op->s) {
            qs_abort(op->s, 0x102);
            op->s->app = NULL;
            op->s = NULL;
        }
        op_done(op, cl->ph->drain_end);
    }
}

static void on_app_timer(qloop *l) {
    qclient *cl = l->app;
    if (!cl->running) return;
    const phase_t *p = cl->ph;
    uint64_t now = now_ns();
    if (now >= p->drain_end) {
        cl->generating = false;
        cancel_late(cl);
        check_phase_done(cl);
        return;
    }
    if (now >= p->deadline) {
        cl->due_head = cl->due_tail = 0;
        if (p->load == LOAD_SEND_SATURATION)
            for (qop *op = cl->inflight.next; op != &cl->inflight; op = op->next)
                if (op->s) fill(cl->c, op->s); /* END now */
    }
    if (cl->generating) open_tick(cl);
    check_phase_done(cl);
    if (cl->running) arm_timer(cl);
}

/* ------------------------------------------------------------------ phase control */

/* ------------------------------------------------------------------ transport statistics */

/* The connection as a reading (none when it is gone). */
static size_t read_transport(qclient *cl, treading *out) {
    if (!cl->c) return 0;
    qconn_reading(cl->c, 0, out);
    return 1;
}

static void stats_begin(qclient *cl) {
    treading r;
    size_t n = read_transport(cl, &r);
    tracker_init(&cl->tracker, "quic", &r, n);
    memset(&cl->stats, 0, sizeof cl->stats);
    cl->tracking = true;
    qloop_set_poll(&cl->loop, TRANSPORT_POLL_NS);
}

static void on_poll(qloop *l) {
    qclient *cl = l->app;
    if (!cl->tracking) return;
    treading r;
    size_t n = read_transport(cl, &r);
    tracker_observe(&cl->tracker, &r, n);
}

static void stats_end(qclient *cl) {
    if (!cl->tracking) return;
    cl->tracking = false;
    qloop_set_poll(&cl->loop, 0);
    treading r;
    size_t n = read_transport(cl, &r);
    if (n > 0) tracker_finish(&cl->tracker, &r, n, &cl->stats); /* else none: the connection died */
}

static void check_phase_done(qclient *cl) {
    if (!cl->running) return;
    if (cl->lanes_active > 0 || cl->generating || !list_empty(&cl->inflight) || !list_empty(&cl->waitq)) return;
    if (cl->ph->load == LOAD_OPEN && cl->ph->kind != RUN_VALIDATE && cl->due_tail > cl->due_head && now_ns() < cl->ph->deadline) return;
    if (cl->ph->load == LOAD_BACKPRESSURE && cl->ph->kind != RUN_VALIDATE && !cl->stop_starting && cl->c &&
        now_ns() < cl->ph->deadline)
        return; /* the submitter waits for stream credit */
    cl->running = false;
    qloop_set_app_timer(&cl->loop, 0);
    stats_end(cl);
    cl->out->max_in_flight = cl->max_in_flight;
    if (cl->ph->load == LOAD_SEND_SATURATION && cl->ph->kind != RUN_VALIDATE) cl->out->max_in_flight = cl->n_lanes;
    pthread_mutex_lock(&cl->mu);
    cl->phase_done = true;
    pthread_cond_broadcast(&cl->cv);
    pthread_mutex_unlock(&cl->mu);
}

static void begin_phase(qclient *cl) {
    const phase_t *p = cl->ph;
    if (p->kind == RUN_MEASURE) stats_begin(cl);
    cl->running = true;
    cl->in_flight = cl->max_in_flight = cl->next_seq = 0;
    cl->stop_starting = false;
    cl->due_head = cl->due_tail = 0;
    cl->generating = false;
    list_init(&cl->inflight);
    list_init(&cl->waitq);
    load_kind load = p->kind == RUN_VALIDATE ? LOAD_CLOSED : p->load;
    uint64_t now = now_ns();
    switch (load) {
    case LOAD_CLOSED:
    case LOAD_WINDOW:
    case LOAD_SEND_SATURATION: {
        uint32_t lanes = p->kind == RUN_VALIDATE ? 1 : client_lanes(cl->a);
        cl->n_lanes = lanes;
        cl->lanes_active = lanes;
        for (uint32_t i = 0; i < lanes; i++) {
            qop *op = &cl->lanes[i];
            op->cl = cl;
            op->lane = i;
            op->lane_ops = 0;
            now = now_ns();
            if (now >= p->deadline && p->kind != RUN_VALIDATE) {
                cl->lanes_active--;
                continue;
            }
            start_lane(cl, op, now);
        }
        break;
    }
    case LOAD_BACKPRESSURE:
        cl->lanes_active = 0;
        bp_pump(cl);
        break;
    case LOAD_OPEN:
        cl->lanes_active = 0;
        schedule_init(&cl->sched, cl->a->arrival, cl->a->rate, cl->a->seed, p->t0);
        cl->next_intended = schedule_next(&cl->sched);
        cl->generating = cl->next_intended < p->deadline;
        if (cl->generating) cl->out->offered = 1;
        open_tick(cl);
        break;
    }
    check_phase_done(cl);
    if (cl->running) arm_timer(cl);
}

static void on_streams(qconn *c) {
    qclient *cl = c->loop->app;
    if (!cl->running) return;
    while (!list_empty(&cl->waitq)) {
        qop *op = cl->waitq.next;
        qstream *s = qstream_open(c, op);
        if (!s) return;
        list_del(op);
        op->waiting = false;
        op->s = s;
        op->msg_start = now_ns();
        list_push(&cl->inflight, op);
        fill(c, s);
    }
    if (cl->ph->load == LOAD_BACKPRESSURE && cl->ph->kind != RUN_VALIDATE) bp_pump(cl);
    check_phase_done(cl);
}

static void on_handshake(qconn *c) {
    qclient *cl = c->loop->app;
    pthread_mutex_lock(&cl->mu);
    cl->connected = true;
    pthread_cond_broadcast(&cl->cv);
    pthread_mutex_unlock(&cl->mu);
}

static void on_conn_close(qconn *c) {
    qclient *cl = c->loop->app;
    snprintf(cl->conn_error, sizeof cl->conn_error, "%s", c->error[0] ? c->error : "the connection closed");
    bool tls = c->tls_error;
    cl->c = NULL;
    /* every operation on it fails */
    if (cl->running) {
        absorb_waiting(cl);
        while (!list_empty(&cl->inflight)) {
            qop *op = cl->inflight.next;
            op->s = NULL;
            fail_op(op, CODE_CONNECT, "the connection failed: %s", cl->conn_error);
        }
        cl->generating = false;
        check_phase_done(cl);
    }
    pthread_mutex_lock(&cl->mu);
    if (!cl->connected) {
        cl->conn_failed = true;
        if (tls)
            fail_set(&cl->conn_failure, CODE_TLS, "TLS handshake with %s failed (TLS certificate/handshake error): %s",
                     cl->a->server, cl->conn_error);
        else
            fail_set(&cl->conn_failure, CODE_CONNECT, "connecting to %s failed: %s", cl->a->server, cl->conn_error);
    }
    pthread_cond_broadcast(&cl->cv);
    pthread_mutex_unlock(&cl->mu);
}

static void on_wake(qloop *l) {
    qclient *cl = l->app;
    pthread_mutex_lock(&cl->mu);
    int cmd = cl->cmd;
    cl->cmd = CMD_NONE;
    pthread_mutex_unlock(&cl->mu);
    if (cmd == CMD_RUN) begin_phase(cl);
    else if (cmd == CMD_CLOSE) {
        if (cl->c) qconn_close(cl->c, "done");
        l->stop = true;
    }
}

static void *loop_main(void *arg) {
    qclient *cl = arg;
    prctl(PR_SET_NAME, "quic-loop", 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    qloop_flush(&cl->loop); /* the first flight */
    qloop_run(&cl->loop);
    return NULL;
}

/* ------------------------------------------------------------------ the stack interface */

static bool do_connect(void *self, failure_t *f) {
    qclient *cl = self;
    char err[400];
    if (!qloop_init(&cl->loop, &cl->local, false, err, sizeof err)) {
        fail_set(f, CODE_CONNECT, "%s", err);
        return false;
    }
    cl->loop.app = cl;
    cl->loop.hooks.on_data = on_data;
    cl->loop.hooks.on_close = on_close;
    cl->loop.hooks.fill = fill;
    cl->loop.hooks.on_streams = on_streams;
    cl->loop.hooks.on_handshake = on_handshake;
    cl->loop.hooks.on_conn_close = on_conn_close;
    cl->loop.on_app_timer = on_app_timer;
    cl->loop.on_wake = on_wake;
    cl->loop.on_poll = on_poll;
    cl->c = qconn_client(&cl->loop, &cl->remote, cl->a->server_name, cl->cred, err, sizeof err);
    if (!cl->c) {
        fail_set(f, CODE_INTERNAL, "%s", err);
        return false;
    }
    if (pthread_create(&cl->thread, NULL, loop_main, cl) != 0) {
        fail_set(f, CODE_INTERNAL, "cannot start the QUIC loop thread");
        return false;
    }
    cl->thread_started = true;
    uint64_t deadline = now_ns() + CONNECT_BOUND_NS;
    pthread_mutex_lock(&cl->mu);
    int rc = 0;
    while (!cl->connected && !cl->conn_failed && rc == 0) rc = cond_wait_until(&cl->cv, &cl->mu, deadline);
    bool ok = cl->connected;
    if (cl->conn_failed) *f = cl->conn_failure;
    else if (!ok) fail_set(f, CODE_TIMEOUT, "connecting to %s took longer than 30 s", cl->a->server);
    pthread_mutex_unlock(&cl->mu);
    return ok;
}

static void do_run(void *self, const phase_t *p, tally_t *out) {
    qclient *cl = self;
    pthread_mutex_lock(&cl->mu);
    cl->ph = p;
    cl->out = out;
    cl->phase_done = false;
    cl->cmd = CMD_RUN;
    pthread_mutex_unlock(&cl->mu);
    qloop_wake(&cl->loop);
    pthread_mutex_lock(&cl->mu);
    while (!cl->phase_done) pthread_cond_wait(&cl->cv, &cl->mu);
    pthread_mutex_unlock(&cl->mu);
}

static void transport_stats(void *self, tstats *out) { *out = ((qclient *)self)->stats; }

static void do_close(void *self) {
    qclient *cl = self;
    if (!cl->thread_started) return;
    pthread_mutex_lock(&cl->mu);
    cl->cmd = CMD_CLOSE;
    pthread_mutex_unlock(&cl->mu);
    qloop_wake(&cl->loop);
    pthread_join(cl->thread, NULL);
}

bool quic_client_new(const client_args *a, const workload_t *w, const char *ca_pem,
                     client_stack *out, failure_t *f) {
    qclient *cl = calloc(1, sizeof *cl);
    char err[400];
    cl->a = a;
    cl->w = w;
    if (!quic_tls_client_credentials(ca_pem, &cl->cred, err, sizeof err)) {
        fail_set(f, CODE_CONFIG, "--ca %s: %s", a->ca, err);
        return false;
    }
    if (!resolve_host_port(a->server, &cl->remote, err, sizeof err)) {
        fail_set(f, CODE_CONFIG, "--server %s: %s", a->server, err);
        return false;
    }
    /* bind to the local address that routes to the server, never the wildcard */
    if (!local_address_for(&cl->remote, &cl->local, err, sizeof err)) {
        fail_set(f, CODE_CONFIG, "--server %s: %s", a->server, err);
        return false;
    }
    cl->lanes = calloc(client_lanes(a), sizeof *cl->lanes);
    if (!cl->lanes) {
        fail_set(f, CODE_INTERNAL, "out of memory for %u lanes", client_lanes(a));
        return false;
    }
    pthread_mutex_init(&cl->mu, NULL);
    cond_init_monotonic(&cl->cv);
    list_init(&cl->inflight);
    list_init(&cl->waitq);
    out->self = cl;
    out->connect = do_connect;
    out->run = do_run;
    out->close = do_close;
    out->transport = transport_stats;
    out->connections = 1;
    return true;
}
