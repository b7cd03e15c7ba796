/* The grpc stack's client on gRPC core's C API: one channel (one HTTP/2 connection) shared by
 * every lane, calls driven with grpc_call_start_batch, and one worker thread per CPU, each
 * polling its own completion queue. A call belongs to the worker whose queue it was created on:
 * every completion of its batches arrives there, so a call's state is touched by one thread at
 * a time and the hot path takes no shared lock (a worker's own mutex guards only its list of
 * calls in flight, which the drain bound walks to cancel what is late).
 *
 * Batches of one call: [SEND_INITIAL_METADATA, SEND_MESSAGE(0) (, SEND_CLOSE_FROM_CLIENT)],
 * then one [SEND_MESSAGE] per further request (the last with SEND_CLOSE_FROM_CLIENT); on the
 * receiving side [RECV_INITIAL_METADATA, RECV_MESSAGE], one [RECV_MESSAGE] per further response,
 * and once every expected response is in, [RECV_MESSAGE, RECV_STATUS_ON_CLIENT] (that last
 * RECV_MESSAGE must find the end of the stream: an extra message is invalid). */
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "client.h"
#include "grpc_common.h"
#include "netutil.h"

#define CONNECT_BOUND_NS (30ULL * NS_PER_SEC)

enum { TAG_SEND, TAG_RECV, TAG_FINAL, TAG_STATUS };

struct gop;
typedef struct {
    struct gop *op;
    int kind;
} gtag;

struct gworker;
struct gclient;

typedef struct gop {
    struct gop *prev, *next; /* the worker's list of calls in flight */
    struct gclient *cl;
    struct gworker *wk;
    grpc_call *call;
    call_t core;
    structured_t scratch;
    uint64_t intended, start, seq;
    uint32_t lane, lane_ops;
    bool dynamic; /* allocated per operation (open, backpressure); else a lane's own */
    gtag tsend, trecv, tfinal, tstatus;
    grpc_metadata_array imd, tmd;
    grpc_status_code status;
    grpc_slice details;
    grpc_byte_buffer *send_buf, *recv_buf;
    atomic_int pending;
    bool status_done, failed, first_send;
    bool accepted; /* the request's SEND_MESSAGE completed (send-saturation on send: `sent`) */
    atomic_bool timed_out;
    failure_t fail;
    /* send-saturation */
    bool saturating, closing;
    uint64_t msg_start, sat_sent, sat_response_bytes;
    uint64_t *sat_starts, *sat_lat;
    size_t sat_cap;
} gop;

typedef struct gworker {
    struct gclient *cl;
    unsigned index;
    grpc_completion_queue *cq;
    pthread_t thread;
    pthread_mutex_t mu;
    gop head; /* sentinel of the in-flight list */
    tally_t tally;
} gworker;

typedef struct gclient {
    const client_args *a;
    const workload_t *w;
    char target[ARG_TEXT + 16];
    grpc_channel_credentials *creds;
    grpc_channel *ch;
    grpc_slice methods[SHAPE_COUNT];
    unsigned nw;
    gworker *wk;
    bool workers_started;

    /* the phase being run */
    const phase_t *ph;
    atomic_long active;     /* lanes / operations / starters still running */
    atomic_long in_flight;  /* operations in flight (open, backpressure) */
    atomic_ulong max_in_flight;
    atomic_ulong next_seq;
    atomic_uint rr;
    atomic_bool stop_starting;
    atomic_bool gen_waiting;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gop *lanes;
    uint32_t n_lanes;

    /* transport statistics of the measured window: TCP_INFO of the sockets the socket
     * mutator registered (grpc_common.c) */
    tpoller poller;
    tstats stats;
} gclient;

static void op_start(gop *op);
static void op_finish(gop *op);

/* ------------------------------------------------------------------ phase bookkeeping */

static void signal_main(gclient *cl) {
    pthread_mutex_lock(&cl->mu);
    pthread_cond_broadcast(&cl->cv);
    pthread_mutex_unlock(&cl->mu);
}

static void active_dec(gclient *cl) {
    if (atomic_fetch_sub(&cl->active, 1) == 1) signal_main(cl);
}

static void note_in_flight(gclient *cl, long n) {
    unsigned long cur = atomic_load(&cl->max_in_flight);
    while ((unsigned long)n > cur && !atomic_compare_exchange_weak(&cl->max_in_flight, &cur, (unsigned long)n)) {
    }
}

static gworker *next_worker(gclient *cl) { return &cl->wk[atomic_fetch_add(&cl->rr, 1) % cl->nw]; }

/* ------------------------------------------------------------------ batches */

/* Starts a batch; `counted`: op_start counted it in `pending` before starting anything, so
 * that completions on the worker cannot finish the op while op_start is still starting it. */
static void start_batch(gop *op, grpc_op *ops, size_t n, gtag *tag, bool counted) {
    if (!counted) atomic_fetch_add(&op->pending, 1);
    grpc_call_error e = grpc_call_start_batch(op->call, ops, n, tag, NULL);
    if (e != GRPC_CALL_OK) {
        atomic_fetch_sub(&op->pending, 1);
        if (!op->failed) {
            op->failed = true;
            fail_set(&op->fail, CODE_INTERNAL, "grpc_call_start_batch failed: error %d", (int)e);
        }
        grpc_call_cancel(op->call, NULL);
    }
}

static bool send_request(gop *op, bool counted) {
    pb_request req;
    if (!call_next_request(&op->core, &op->scratch, &req)) {
        fail_set(&op->fail, CODE_INTERNAL, "cannot build request %u", op->core.sent - 1);
        return false;
    }
    size_t n = request_size_of(&req);
    grpc_slice s = grpc_slice_malloc(n);
    pack_request(&req, GRPC_SLICE_START_PTR(s));
    op->send_buf = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    grpc_op ops[3];
    memset(ops, 0, sizeof ops);
    size_t k = 0;
    if (op->first_send) {
        ops[k].op = GRPC_OP_SEND_INITIAL_METADATA;
        k++;
        op->first_send = false;
    }
    ops[k].op = GRPC_OP_SEND_MESSAGE;
    ops[k].data.send_message.send_message = op->send_buf;
    k++;
    if (!op->saturating && op->core.sent == op->core.n_req) {
        ops[k].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        k++;
    }
    start_batch(op, ops, k, &op->tsend, counted);
    return true;
}

static void send_close(gop *op) {
    grpc_op o;
    memset(&o, 0, sizeof o);
    o.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    op->closing = true;
    start_batch(op, &o, 1, &op->tsend, false);
}

static void recv_message(gop *op, bool with_initial, bool counted) {
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    size_t k = 0;
    if (with_initial) {
        ops[k].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[k].data.recv_initial_metadata.recv_initial_metadata = &op->imd;
        k++;
    }
    ops[k].op = GRPC_OP_RECV_MESSAGE;
    ops[k].data.recv_message.recv_message = &op->recv_buf;
    k++;
    start_batch(op, ops, k, &op->trecv, counted);
}

static void recv_status(gop *op, bool with_message) {
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    size_t k = 0;
    if (with_message) {
        ops[k].op = GRPC_OP_RECV_MESSAGE;
        ops[k].data.recv_message.recv_message = &op->recv_buf;
        k++;
    }
    ops[k].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[k].data.recv_status_on_client.trailing_metadata = &op->tmd;
    ops[k].data.recv_status_on_client.status = &op->status;
    ops[k].data.recv_status_on_client.status_details = &op->details;
    k++;
    start_batch(op, ops, k, with_message ? &op->tfinal : &op->tstatus, false);
}

/* Reads a received message whole (one slice, copied only if the buffer has several). */
static bool take_message(gop *op, grpc_slice *out) {
    grpc_byte_buffer_reader r;
    if (!grpc_byte_buffer_reader_init(&r, op->recv_buf)) return false;
    *out = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    grpc_byte_buffer_destroy(op->recv_buf);
    op->recv_buf = NULL;
    return true;
}

static void invalidate(gop *op) {
    op->failed = true;
    grpc_call_cancel_with_status(op->call, GRPC_STATUS_CANCELLED, "invalid response", NULL);
}

/* ------------------------------------------------------------------ completions */

static void on_send(gop *op, bool ok) {
    grpc_byte_buffer_destroy(op->send_buf);
    op->send_buf = NULL;
    if (!ok || op->failed) return; /* the status says why */
    op->accepted = true;
    if (op->saturating) {
        if (op->closing) return;
        uint64_t now = now_ns();
        if (op->sat_sent == op->sat_cap) {
            size_t cap = op->sat_cap ? op->sat_cap * 2 : 1024;
            uint64_t *s = realloc(op->sat_starts, cap * sizeof *s);
            if (s) op->sat_starts = s;
            uint64_t *l = realloc(op->sat_lat, cap * sizeof *l);
            if (l) op->sat_lat = l;
            if (!s || !l) {
                fail_set(&op->fail, CODE_INTERNAL, "out of memory for message timings");
                invalidate(op);
                return;
            }
            op->sat_cap = cap;
        }
        op->sat_starts[op->sat_sent] = op->msg_start;
        op->sat_lat[op->sat_sent] = now - op->msg_start;
        op->sat_sent++;
        if (now < op->cl->ph->deadline) {
            op->msg_start = now;
            if (!send_request(op, false)) invalidate(op);
        } else {
            send_close(op);
        }
        return;
    }
    if (op->core.sent < op->core.n_req && !send_request(op, false)) invalidate(op);
}

static void on_recv(gop *op, bool ok) {
    if (!ok || !op->recv_buf) {
        /* the stream ended (or the call failed) before every response: read the status */
        recv_status(op, false);
        return;
    }
    grpc_slice s;
    if (!take_message(op, &s)) {
        fail_set(&op->fail, CODE_INVALID, "unreadable response message");
        invalidate(op);
        recv_status(op, false);
        return;
    }
    bool valid;
    if (op->saturating) {
        valid = check_stream_summary(op->cl->w, op->sat_sent, GRPC_SLICE_START_PTR(s),
                                     GRPC_SLICE_LENGTH(s), &op->sat_response_bytes, &op->fail);
        if (valid) op->core.received = op->core.n_resp;
    } else {
        valid = call_on_message(&op->core, GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s), &op->fail);
    }
    grpc_slice_unref(s);
    if (!valid) {
        invalidate(op);
        recv_status(op, false);
    } else if (op->core.received < op->core.n_resp) {
        recv_message(op, false, false);
    } else {
        recv_status(op, true);
    }
}

static void classify_status(gop *op) {
    char details[512];
    slice_text(op->details, details, sizeof details);
    if (op->failed) return; /* invalid: already said why */
    if (atomic_load(&op->timed_out)) {
        fail_set(&op->fail, CODE_TIMEOUT, "the operation did not finish within the drain bound");
        op->failed = true;
        return;
    }
    switch (op->status) {
    case GRPC_STATUS_OK:
        if (!call_on_status_ok(&op->core, &op->fail)) op->failed = true;
        return;
    case GRPC_STATUS_DEADLINE_EXCEEDED:
        fail_set(&op->fail, CODE_TIMEOUT, "status DEADLINE_EXCEEDED: %s", details);
        break;
    case GRPC_STATUS_UNAVAILABLE: {
        /* gRPC core makes UNAVAILABLE for broken connections; its text names TLS failures */
        bool tls = strstr(details, "SSL") || strstr(details, "ssl") || strstr(details, "andshake") ||
                   strstr(details, "ertificate");
        fail_set(&op->fail, tls ? CODE_TLS : CODE_CONNECT, "status UNAVAILABLE: %s", details);
        break;
    }
    case GRPC_STATUS_CANCELLED:
        fail_set(&op->fail, CODE_CONNECT, "status CANCELLED (the call was cut): %s", details);
        break;
    default:
        fail_set(&op->fail, CODE_RPC, "the server ended the call with status %s (%d): %s",
                 grpc_status_name(op->status), (int)op->status, details);
    }
    op->failed = true;
}

static void on_final(gop *op, bool ok) {
    if (op->recv_buf) {
        grpc_byte_buffer_destroy(op->recv_buf);
        op->recv_buf = NULL;
        if (!op->failed) {
            fail_set(&op->fail, CODE_INVALID, "the server sent more than the %u response message%s asked for",
                     op->core.n_resp, op->core.n_resp == 1 ? "" : "s");
            op->failed = true;
        }
    }
    (void)ok;
    op->status_done = true;
    classify_status(op);
}

static void on_status(gop *op, bool ok) {
    (void)ok;
    op->status_done = true;
    classify_status(op);
}

static gop *new_dynamic(gclient *cl, uint64_t intended, uint64_t start);

static void handle(gtag *tag, bool ok) {
    gop *op = tag->op;
    atomic_fetch_sub(&op->pending, 1);
    switch (tag->kind) {
    case TAG_SEND: on_send(op, ok); break;
    case TAG_RECV: on_recv(op, ok); break;
    case TAG_FINAL: on_final(op, ok); break;
    case TAG_STATUS: on_status(op, ok); break;
    }
    if (op->status_done && atomic_load(&op->pending) == 0) op_finish(op);
}

static void *worker_main(void *arg) {
    gworker *wk = arg;
    char name[16];
    snprintf(name, sizeof name, "grpc-worker-%u", wk->index);
    prctl(PR_SET_NAME, name, 0, 0, 0);
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(wk->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
        if (ev.type == GRPC_OP_COMPLETE) handle(ev.tag, ev.success != 0);
    }
    return NULL;
}

/* ------------------------------------------------------------------ operations */

static void list_add(gworker *wk, gop *op) {
    pthread_mutex_lock(&wk->mu);
    op->next = wk->head.next;
    op->prev = &wk->head;
    wk->head.next->prev = op;
    wk->head.next = op;
    pthread_mutex_unlock(&wk->mu);
}

static void list_remove(gworker *wk, gop *op) {
    pthread_mutex_lock(&wk->mu);
    op->prev->next = op->next;
    op->next->prev = op->prev;
    op->next = op->prev = NULL;
    pthread_mutex_unlock(&wk->mu);
}

/* Creates the call on the op's worker queue and starts its first batches. Any thread may call
 * it; from then on the op belongs to its worker. */
static void op_start(gop *op) {
    gclient *cl = op->cl ? op->cl : op->wk->cl;
    op->cl = cl;
    const phase_t *p = cl->ph;
    /* send-saturation streams client streams; on send its lanes run commands as closed lanes */
    bool saturating = p->load == LOAD_SEND_SATURATION && p->kind != RUN_VALIDATE &&
                      cl->w->shape == SHAPE_CLIENT_STREAM;
    call_init(&op->core, cl->w, op->seq);
    op->tsend = (gtag){op, TAG_SEND};
    op->trecv = (gtag){op, TAG_RECV};
    op->tfinal = (gtag){op, TAG_FINAL};
    op->tstatus = (gtag){op, TAG_STATUS};
    grpc_metadata_array_init(&op->imd);
    grpc_metadata_array_init(&op->tmd);
    op->details = grpc_empty_slice();
    op->pending = 0;
    op->status_done = op->failed = false;
    atomic_store(&op->timed_out, false);
    fail_clear(&op->fail);
    op->first_send = true;
    op->accepted = false;
    op->saturating = saturating;
    op->closing = false;
    op->sat_sent = 0;
    op->sat_response_bytes = 0;
    long n = atomic_fetch_add(&cl->in_flight, 1) + 1;
    note_in_flight(cl, n);
    op->call = grpc_channel_create_call(cl->ch, NULL, GRPC_PROPAGATE_DEFAULTS, op->wk->cq,
                                        cl->methods[cl->w->shape], NULL,
                                        gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    list_add(op->wk, op);
    op->msg_start = now_ns();
    /* count both first batches before starting either (see start_batch) */
    atomic_store(&op->pending, 2);
    if (!send_request(op, true)) {
        atomic_fetch_sub(&op->pending, 1);
        op->failed = true;
        grpc_call_cancel(op->call, NULL);
    }
    recv_message(op, true, true);
}

static void op_release(gop *op) {
    grpc_call_unref(op->call);
    op->call = NULL;
    grpc_metadata_array_destroy(&op->imd);
    grpc_metadata_array_destroy(&op->tmd);
    grpc_slice_unref(op->details);
}

static void start_lane_op(gclient *cl, gop *op, uint64_t now) {
    op->seq = op->lane + (uint64_t)op->lane_ops * cl->n_lanes;
    op->lane_ops++;
    op->intended = op->start = now;
    op_start(op);
}

static void op_finish(gop *op) {
    gclient *cl = op->cl;
    gworker *wk = op->wk;
    const phase_t *p = cl->ph;
    uint64_t end = now_ns();
    if (atomic_load(&op->timed_out) && end > p->drain_end) end = p->drain_end;
    list_remove(wk, op);
    op_release(op);
    const workload_t *w = cl->w;
    uint64_t sent = op->saturating ? op->sat_sent : op->core.n_req;
    op_record r = {op->failed, &op->fail, op->intended, op->start, end, op->core.n_req, op->core.n_resp,
                   sent * w->request_size,
                   op->saturating ? op->sat_response_bytes : op->core.response_bytes,
                   op->saturating, op->sat_sent, op->sat_starts, op->sat_lat};
    tally_operation(&wk->tally, p, &r);
    if (p->load == LOAD_SEND_SATURATION && w->shape == SHAPE_SEND && op->accepted) wk->tally.sent++;
    atomic_fetch_sub(&cl->in_flight, 1);

    if (!op->dynamic) {
        /* a lane: closed, window, validate, send-saturation streams */
        uint64_t now = now_ns();
        bool again = !op->failed && !op->saturating && p->kind != RUN_VALIDATE && now < p->deadline;
        if (again) {
            start_lane_op(cl, op, now);
        } else {
            active_dec(cl);
        }
        return;
    }
    bool failed = op->failed;
    structured_free(&op->scratch);
    free(op->sat_starts);
    free(op->sat_lat);
    free(op);
    if (p->load == LOAD_BACKPRESSURE) {
        /* the submitter: gRPC core takes a new call at once (it queues what the server's
         * stream credit cannot carry yet, and its C API has no readiness signal), so the next
         * call starts as soon as one ends, within the cap and the server's stream credit */
        if (failed) atomic_store(&cl->stop_starting, true);
        uint64_t now = now_ns();
        if (!atomic_load(&cl->stop_starting) && now < p->deadline) {
            atomic_fetch_add(&cl->active, 1);
            op_start(new_dynamic(cl, now, now));
        }
    } else if (p->load == LOAD_OPEN && atomic_load(&cl->gen_waiting)) {
        signal_main(cl);
    }
    active_dec(cl);
}

/* ------------------------------------------------------------------ phases */

static void cancel_late(gclient *cl) {
    for (unsigned i = 0; i < cl->nw; i++) {
        gworker *wk = &cl->wk[i];
        pthread_mutex_lock(&wk->mu);
        for (gop *op = wk->head.next; op != &wk->head; op = op->next) {
            atomic_store(&op->timed_out, true);
            grpc_call_cancel_with_status(op->call, GRPC_STATUS_DEADLINE_EXCEEDED,
                                         "the drain bound passed", NULL);
        }
        pthread_mutex_unlock(&wk->mu);
    }
}

/* Waits until every lane and operation is done; at the drain bound cancels what is late. */
static void wait_phase(gclient *cl, const phase_t *p) {
    bool cancelled = false;
    pthread_mutex_lock(&cl->mu);
    while (atomic_load(&cl->active) > 0) {
        uint64_t until = cancelled ? now_ns() + 100 * NS_PER_MS : p->drain_end;
        int rc = cond_wait_until(&cl->cv, &cl->mu, until);
        if (rc != 0 && now_ns() >= p->drain_end && !cancelled) {
            pthread_mutex_unlock(&cl->mu);
            cancel_late(cl);
            cancelled = true;
            pthread_mutex_lock(&cl->mu);
        }
    }
    pthread_mutex_unlock(&cl->mu);
}

static gop *new_dynamic(gclient *cl, uint64_t intended, uint64_t start) {
    gop *op = calloc(1, sizeof *op);
    if (!op) {
        diag("out of memory for an operation");
        abort();
    }
    op->dynamic = true;
    op->cl = cl;
    op->wk = next_worker(cl);
    op->intended = intended;
    op->start = start;
    op->seq = atomic_fetch_add(&cl->next_seq, 1);
    return op;
}

/* The open model: this thread keeps the schedule and starts each call itself at its intended
 * time (clock_nanosleep, then a spin of up to 50 us); the call then belongs to its worker. */
static void run_open(gclient *cl, const phase_t *p, tally_t *out) {
    schedule_t s;
    schedule_init(&s, cl->a->arrival, cl->a->rate, cl->a->seed, p->t0);
    uint64_t offered = 0;
    long cap = (long)cl->a->concurrency;
    uint64_t gap = (uint64_t)(1e9 / cl->a->rate);
    uint64_t spin = gap / 4 < 50000 ? gap / 4 : 50000;
    atomic_fetch_add(&cl->active, 1); /* the generator */
    for (;;) {
        uint64_t intended = schedule_next(&s);
        if (intended >= p->deadline) break;
        offered++;
        /* wait, in order, for a free slot */
        if (atomic_load(&cl->in_flight) >= cap) {
            pthread_mutex_lock(&cl->mu);
            atomic_store(&cl->gen_waiting, true);
            while (atomic_load(&cl->in_flight) >= cap && now_ns() < p->deadline) {
                cond_wait_until(&cl->cv, &cl->mu, now_ns() + NS_PER_MS);
            }
            atomic_store(&cl->gen_waiting, false);
            pthread_mutex_unlock(&cl->mu);
        }
        pace_until(intended, spin);
        uint64_t start = now_ns();
        if (start >= p->deadline) break; /* still waiting at the deadline: not started */
        hist_record(out->lag, start - intended);
        atomic_fetch_add(&cl->active, 1);
        op_start(new_dynamic(cl, intended, start));
    }
    /* intended starts after a break still count as offered */
    for (uint64_t i = schedule_next(&s); i < p->deadline; i = schedule_next(&s)) offered++;
    out->offered = offered;
    active_dec(cl);
}

static void run_phase(void *self, const phase_t *p, tally_t *out) {
    gclient *cl = self;
    cl->ph = p;
    for (unsigned i = 0; i < cl->nw; i++) tally_init(&cl->wk[i].tally, p);
    atomic_store(&cl->in_flight, 0);
    atomic_store(&cl->max_in_flight, 0);
    atomic_store(&cl->next_seq, 0);
    atomic_store(&cl->stop_starting, false);
    atomic_store(&cl->active, 0);
    uint64_t now = now_ns();
    uint32_t lanes = p->kind == RUN_VALIDATE ? 1 : client_lanes(cl->a);

    switch (p->kind == RUN_VALIDATE ? LOAD_CLOSED : p->load) {
    case LOAD_CLOSED:
    case LOAD_WINDOW:
    case LOAD_SEND_SATURATION:
        cl->n_lanes = lanes;
        atomic_store(&cl->active, lanes);
        for (uint32_t i = 0; i < lanes; i++) {
            gop *op = &cl->lanes[i];
            op->lane = i;
            op->lane_ops = 0;
            op->cl = cl;
            op->wk = &cl->wk[i % cl->nw];
            if (now_ns() >= p->deadline && p->kind != RUN_VALIDATE) {
                active_dec(cl); /* a stream opened before the deadline sends; after it, none */
                continue;
            }
            start_lane_op(cl, op, now_ns());
        }
        break;
    case LOAD_BACKPRESSURE: {
        uint32_t cap = cl->a->max_in_flight < MAX_CONCURRENT_STREAMS ? cl->a->max_in_flight : MAX_CONCURRENT_STREAMS;
        for (uint32_t i = 0; i < cap && !atomic_load(&cl->stop_starting); i++) {
            now = now_ns();
            if (now >= p->deadline) break;
            atomic_fetch_add(&cl->active, 1);
            op_start(new_dynamic(cl, now, now));
        }
        break;
    }
    case LOAD_OPEN:
        run_open(cl, p, out);
        break;
    }
    wait_phase(cl, p);
    for (unsigned i = 0; i < cl->nw; i++) {
        tally_merge(out, &cl->wk[i].tally);
        tally_free(&cl->wk[i].tally);
    }
    out->max_in_flight = atomic_load(&cl->max_in_flight);
    if (p->load == LOAD_SEND_SATURATION && p->kind != RUN_VALIDATE) out->max_in_flight = lanes;
}

/* ------------------------------------------------------------------ connection */

static bool wait_tag(grpc_completion_queue *cq, void *tag, uint64_t deadline_ns, bool *success) {
    gpr_timespec d = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                  gpr_time_from_nanos((int64_t)(deadline_ns - now_ns()), GPR_TIMESPAN));
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(cq, d, NULL);
        if (ev.type == GRPC_QUEUE_TIMEOUT || ev.type == GRPC_QUEUE_SHUTDOWN) return false;
        if (ev.tag == tag) {
            *success = ev.success != 0;
            return true;
        }
    }
}

/* Asks the channel why it failed: a call on a channel in TRANSIENT_FAILURE fails at once with
 * UNAVAILABLE and the connection's last error as its text. */
static void probe_failure(gclient *cl, grpc_completion_queue *cq, failure_t *f) {
    grpc_call *call = grpc_channel_create_call(cl->ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                               cl->methods[SHAPE_UNARY], NULL,
                                               gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(5, GPR_TIMESPAN)),
                                               NULL);
    grpc_metadata_array md;
    grpc_metadata_array_init(&md);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[1].data.recv_status_on_client.trailing_metadata = &md;
    ops[1].data.recv_status_on_client.status = &status;
    ops[1].data.recv_status_on_client.status_details = &details;
    int tag;
    bool ok;
    grpc_call_start_batch(call, ops, 2, &tag, NULL);
    wait_tag(cq, &tag, now_ns() + 6 * NS_PER_SEC, &ok);
    char text[600];
    slice_text(details, text, sizeof text);
    bool tls = strstr(text, "SSL") || strstr(text, "ssl") || strstr(text, "andshake") ||
               strstr(text, "ertificate") || strstr(text, "ALPN");
    fail_set(f, tls ? CODE_TLS : CODE_CONNECT, "%s with %s failed (%s): %s",
             tls ? "TLS handshake" : "connecting", cl->a->server,
             tls ? "TLS certificate/handshake error" : "transport error", text);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&md);
    grpc_call_unref(call);
}

static bool do_connect(void *self, failure_t *f) {
    gclient *cl = self;
    grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
    uint64_t deadline = now_ns() + CONNECT_BOUND_NS;
    grpc_connectivity_state st = grpc_channel_check_connectivity_state(cl->ch, 1);
    bool ok = false;
    while (st != GRPC_CHANNEL_READY) {
        if (st == GRPC_CHANNEL_TRANSIENT_FAILURE || st == GRPC_CHANNEL_SHUTDOWN) break;
        int tag;
        bool success;
        gpr_timespec d = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                      gpr_time_from_nanos((int64_t)(deadline - now_ns()), GPR_TIMESPAN));
        grpc_channel_watch_connectivity_state(cl->ch, st, d, cq, &tag);
        if (!wait_tag(cq, &tag, deadline + NS_PER_SEC, &success) || !success) {
            fail_set(f, CODE_TIMEOUT, "connecting to %s took longer than 30 s", cl->a->server);
            goto done;
        }
        st = grpc_channel_check_connectivity_state(cl->ch, 0);
    }
    if (st == GRPC_CHANNEL_READY) ok = true;
    else probe_failure(cl, cq, f);
done:
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_past(GPR_CLOCK_MONOTONIC), NULL).type != GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
    if (!ok) return false;
    if (grpc_mutated_sockets() == 0) diag("gRPC did not call the socket mutator: TCP_CONGESTION not set");
    for (unsigned i = 0; i < cl->nw; i++) {
        if (pthread_create(&cl->wk[i].thread, NULL, worker_main, &cl->wk[i]) != 0) {
            fail_set(f, CODE_INTERNAL, "cannot start worker thread %u", i);
            return false;
        }
    }
    cl->workers_started = true;
    return true;
}

/* The measured window is polled from a thread of its own: TCP_INFO of every socket of the
 * channel, at START, every 5 ms and after the drain. */
static size_t read_sockets(void *ctx, treading *out, size_t cap) {
    (void)ctx;
    return tcp_sockets_read(out, cap);
}

static void run_with_stats(void *self, const phase_t *p, tally_t *out) {
    gclient *cl = self;
    if (p->kind != RUN_MEASURE) {
        run_phase(self, p, out);
        return;
    }
    tpoller_start(&cl->poller, "tcp", read_sockets, NULL);
    run_phase(self, p, out);
    tpoller_finish(&cl->poller, &cl->stats);
}

static void transport_stats(void *self, tstats *out) { *out = ((gclient *)self)->stats; }

static void do_close(void *self) {
    gclient *cl = self;
    tcp_sockets_clear(); /* the duplicates first, or they would keep the connection open */
    grpc_channel_destroy(cl->ch);
    cl->ch = NULL;
}

bool grpc_client_new(const client_args *a, const workload_t *w, const char *ca_pem,
                     client_stack *out, failure_t *f) {
    grpc_init();
    gclient *cl = calloc(1, sizeof *cl);
    cl->a = a;
    cl->w = w;
    char host[ARG_TEXT];
    uint16_t port;
    split_host_port(a->server, host, sizeof host, &port);
    addr_t addr;
    char err[300];
    if (resolve_host_port(a->server, &addr, err, sizeof err)) {
        char text[ARG_TEXT];
        addr_format(&addr, text, sizeof text);
        snprintf(cl->target, sizeof cl->target, "%s:%s", addr.ss.ss_family == AF_INET6 ? "ipv6" : "ipv4", text);
    } else {
        fail_set(f, CODE_CONFIG, "--server %s: %s", a->server, err);
        return false;
    }
    /* --tls off (1.3): h2c, HTTP/2 with prior knowledge */
    cl->creds = a->tls ? grpc_ssl_credentials_create_ex(ca_pem, NULL, NULL, NULL)
                       : grpc_insecure_credentials_create();
    if (!cl->creds) {
        fail_set(f, CODE_CONFIG, "--ca %s: gRPC refused the certificate", a->ca);
        return false;
    }
    cl->ch = grpc_channel_create(cl->target, cl->creds,
                                 grpc_peer_channel_args(true, a->tls ? a->server_name : NULL));
    for (int s = 0; s < SHAPE_COUNT; s++) cl->methods[s] = grpc_slice_from_static_string(method_path((shape_kind)s));
    cl->nw = worker_count();
    cl->wk = calloc(cl->nw, sizeof *cl->wk);
    for (unsigned i = 0; i < cl->nw; i++) {
        gworker *wk = &cl->wk[i];
        wk->cl = cl;
        wk->index = i;
        wk->cq = grpc_completion_queue_create_for_next(NULL);
        pthread_mutex_init(&wk->mu, NULL);
        wk->head.next = wk->head.prev = &wk->head;
    }
    uint32_t lanes = client_lanes(a);
    cl->lanes = calloc(lanes, sizeof *cl->lanes);
    if (!cl->lanes || !cl->wk) {
        fail_set(f, CODE_INTERNAL, "out of memory for %u lanes", lanes);
        return false;
    }
    pthread_mutex_init(&cl->mu, NULL);
    cond_init_monotonic(&cl->cv);
    out->self = cl;
    out->connect = do_connect;
    out->run = run_with_stats;
    out->close = do_close;
    out->transport = transport_stats;
    out->connections = 1;
    return true;
}
