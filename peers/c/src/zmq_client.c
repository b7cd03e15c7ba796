#define _GNU_SOURCE 1 /* ppoll */
/* The zmq stack's client (docs/stacks.md "zmq") on libzmq's C API: one request and one command
 * ROUTER socket, every lane multiplexed on them by an 8-byte operation id, and the load model on
 * one thread (this one, the main thread) in a zmq_poll loop. A request is accepted when zmq_send
 * of its last frame with ZMQ_DONTWAIT succeeded; EAGAIN (the high-water mark) makes the loop
 * wait for ZMQ_POLLOUT before it tries again, and nothing else starts meanwhile. A unary
 * operation ends with its reply, a send operation when its command was accepted. The id is the
 * operation's slot and the slot's generation, so a late or unknown reply is recognized. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "fault.h"
#include "netutil.h"
#include "zmq_common.h"

#define CONNECT_BOUND_NS (30ULL * NS_PER_SEC)
#define NO_LANE UINT32_MAX
/* The open model spins (socket checks without waiting) for the last 50 us before a start. */
#define OPEN_SPIN_NS (50ULL * 1000ULL)
/* While a message waits at the high-water mark, it is retried at least this often. */
#define STALL_RETRY_NS NS_PER_MS

typedef struct {
    uint64_t intended, start, seq;
    uint32_t lane, gen;
    bool in_use;
} zop;

typedef struct {
    const client_args *a;
    const workload_t *w;
    void *ctx, *req, *cmd, *data; /* data: the socket of the shape (req for unary, cmd for send) */
    const char *data_id;          /* the server's routing id on it */
    char req_ep[ARG_TEXT + 16], cmd_ep[ARG_TEXT + 16];
    structured_t scratch;
    buf_t packed; /* the body of the request being sent */
    zop *ops;
    uint32_t n_ops, cap_ops, *free_slots, n_free, in_flight;
    uint32_t stalled; /* the slot whose send met the high-water mark, or NO_LANE */
    uint64_t last_id;
    /* the phase being run */
    const phase_t *ph;
    tally_t *t;
    uint32_t lanes, *ready, r_head, r_len, *lane_ops;
    bool stop_starting, generator_done;
    uint64_t next_seq, next_intended;
    schedule_t sched;
} zclient;

static const char *data_ep(const zclient *cl) {
    return cl->data == cl->req ? cl->req_ep : cl->cmd_ep;
}

/* ------------------------------------------------------------------ slots */

static bool grow_slots(zclient *cl) {
    uint32_t cap = cl->cap_ops ? cl->cap_ops * 2 : 1024;
    zop *ops = realloc(cl->ops, cap * sizeof *ops);
    if (ops) cl->ops = ops;
    uint32_t *fr = realloc(cl->free_slots, cap * sizeof *fr);
    if (fr) cl->free_slots = fr;
    if (!ops || !fr) return false;
    memset(ops + cl->cap_ops, 0, (cap - cl->cap_ops) * sizeof *ops);
    cl->cap_ops = cap;
    return true;
}

static uint32_t take_slot(zclient *cl) {
    if (cl->n_free) return cl->free_slots[--cl->n_free];
    if (cl->n_ops == cl->cap_ops && !grow_slots(cl)) {
        diag("out of memory for operation slots");
        abort();
    }
    return cl->n_ops++;
}

static uint64_t op_id(const zclient *cl, uint32_t slot) {
    return (uint64_t)cl->ops[slot].gen << 32 | slot;
}

/* ------------------------------------------------------------------ operations */

static void lane_ready(zclient *cl, uint32_t lane) {
    cl->ready[(cl->r_head + cl->r_len++) % cl->lanes] = lane;
}

/* Ends the operation in `slot`: records it, frees the slot, and lets its lane go on. */
static void op_end(zclient *cl, uint32_t slot, const failure_t *f, uint64_t end, uint64_t response_bytes) {
    zop *op = &cl->ops[slot];
    const phase_t *p = cl->ph;
    bool unary = cl->w->shape == SHAPE_UNARY;
    if (f) tally_fail(cl->t, end, 1, f);
    else tally_ok(cl->t, p, op->intended, op->start, end, 1, unary ? 1 : 0, cl->w->request_size, response_bytes);
    op->in_use = false;
    op->gen++;
    cl->free_slots[cl->n_free++] = slot;
    cl->in_flight--;
    if (f && p->load == LOAD_BACKPRESSURE) cl->stop_starting = true;
    bool again = op->lane != NO_LANE && !f && p->kind != RUN_VALIDATE && now_ns() < p->deadline;
    if (again) lane_ready(cl, op->lane);
}

/* The request's frames go out; false when the socket is at its high-water mark (the op then
 * waits for POLLOUT). */
static bool op_send(zclient *cl, uint32_t slot) {
    uint8_t id[ZMQ_ID_BYTES];
    uint64_t oid = op_id(cl, slot);
    zmq_put_id(id, oid);
    zframe frames[3] = {{(const uint8_t *)cl->data_id, strlen(cl->data_id)},
                        {id, ZMQ_ID_BYTES},
                        {cl->packed.data, cl->packed.len}};
    int e = zmq_send_frames(cl->data, frames, 3);
    uint64_t now = now_ns();
    if (e == EAGAIN) {
        cl->stalled = slot;
        return false;
    }
    cl->stalled = NO_LANE;
    if (e != 0) {
        failure_t f;
        fail_set(&f, CODE_CONNECT, "sending to %s failed: %s", data_ep(cl), zmq_strerror(e));
        op_end(cl, slot, &f, now, 0);
        return true;
    }
    cl->last_id = oid;
    if (cl->ph->load == LOAD_SEND_SATURATION) cl->t->sent++; /* accepted by the transport */
    if (cl->w->shape == SHAPE_SEND) op_end(cl, slot, NULL, now, 0); /* accepted: done */
    return true;
}

static bool pack_request_body(zclient *cl, uint64_t seq, client_fault fault) {
    call_t c;
    pb_request req;
    call_init(&c, cl->w, seq);
    fault_owned owned = {0};
    bool ok = call_next_request(&c, &cl->scratch, &req) && fault_request(fault, &req, &cl->scratch, &owned);
    size_t n = ok ? request_size_of(&req) : 0;
    cl->packed.len = cl->packed.off = 0;
    ok = ok && buf_reserve(&cl->packed, n ? n : 1);
    if (ok) cl->packed.len = pack_request(&req, cl->packed.data);
    fault_owned_free(&owned);
    return ok;
}

/* Starts an operation of `lane` (NO_LANE: the submitter's or the generator's). */
static void op_begin(zclient *cl, uint32_t lane, uint64_t intended) {
    uint32_t slot = take_slot(cl);
    zop *op = &cl->ops[slot];
    op->in_use = true;
    op->lane = lane;
    op->start = now_ns();
    op->intended = intended ? intended : op->start;
    op->seq = lane == NO_LANE ? cl->next_seq++ : lane + (uint64_t)cl->lane_ops[lane]++ * cl->lanes;
    cl->in_flight++;
    if (cl->in_flight > cl->t->max_in_flight) cl->t->max_in_flight = cl->in_flight;
    if (cl->t->open) hist_record(cl->t->lag, op->start - op->intended);
    if (!pack_request_body(cl, op->seq, CF_NONE)) {
        failure_t f;
        fail_set(&f, CODE_INTERNAL, "cannot build request %" PRIu64, op->seq);
        op_end(cl, slot, &f, now_ns(), 0);
        return;
    }
    op_send(cl, slot);
}

/* ------------------------------------------------------------------ replies */

/* The operation a reply's id frame names, or NO_LANE when none in flight has that id. */
static uint32_t slot_of(const zclient *cl, const zframe *frames, size_t n) {
    if (n == 0 || frames[0].len != ZMQ_ID_BYTES) return NO_LANE;
    uint64_t id = zmq_get_id(frames[0].data);
    uint32_t slot = (uint32_t)id;
    const zop *op = slot < cl->n_ops ? &cl->ops[slot] : NULL;
    if (!op || !op->in_use || op->gen != (uint32_t)(id >> 32) || slot == cl->stalled) return NO_LANE;
    return slot;
}

/* A reply on the request endpoint: ends its operation; one that names no operation in flight
 * fails the phase on its own. */
static void on_reply(zclient *cl, zmq_in *in) {
    zframe frames[ZMQ_MAX_FRAMES];
    size_t n = zmq_in_frames(in, frames), seen = in->total ? in->total - 1 : 0;
    uint64_t now = now_ns(), id;
    if (seen == 2 && frames[0].len == ZMQ_HELLO_LEN && memcmp(frames[0].data, ZMQ_HELLO, ZMQ_HELLO_LEN) == 0)
        return; /* a repeated hello answer */
    failure_t f;
    uint32_t slot = slot_of(cl, frames, n);
    bool framed = seen == n && zmq_reply_id(frames, n, &id, &f);
    if (seen != n) {
        char text[400];
        zmq_describe_frames(frames, n, text, sizeof text);
        fail_set(&f, CODE_INVALID, "a reply of %zu frames, expected 3 ([id][Status][Response]): %s", seen, text);
    } else if (framed && slot == NO_LANE) {
        char text[400];
        zmq_describe_frames(frames, n, text, sizeof text);
        fail_set(&f, CODE_INVALID, "a reply whose id %" PRIu64 " is not in flight: %s", id, text);
        framed = false;
    }
    if (!framed) {
        if (slot != NO_LANE) op_end(cl, slot, &f, now, 0);
        else tally_fail(cl->t, now, 1, &f);
        return;
    }
    zop *op = &cl->ops[slot];
    call_t c;
    call_init(&c, cl->w, op->seq);
    c.sent = 1;
    if (zmq_check_reply(&c, frames, &f)) op_end(cl, slot, NULL, now, c.response_bytes);
    else op_end(cl, slot, &f, now, 0);
}

static void read_replies(zclient *cl) {
    zmq_in in;
    for (int k = 0; k < 1024 && zmq_in_recv(cl->req, &in); k++) {
        on_reply(cl, &in);
        zmq_in_close(&in);
    }
}

/* At the drain bound: every operation still in flight fails with timeout. */
static void time_out(zclient *cl) {
    const phase_t *p = cl->ph;
    uint64_t bound_ms = (p->drain_end - p->deadline) / NS_PER_MS;
    for (uint32_t slot = 0; slot < cl->n_ops; slot++) {
        if (!cl->ops[slot].in_use) continue;
        failure_t f;
        if (slot == cl->stalled)
            fail_set(&f, CODE_TIMEOUT, "%s did not accept the message within %" PRIu64
                     " ms (the socket stayed at its high-water mark); last request sent: id %" PRIu64,
                     data_ep(cl), bound_ms, cl->last_id);
        else
            fail_set(&f, CODE_TIMEOUT, "no reply from %s within %" PRIu64 " ms; last request sent: id %" PRIu64,
                     data_ep(cl), bound_ms, cl->last_id);
        cl->ops[slot].lane = NO_LANE;
        op_end(cl, slot, &f, p->drain_end, 0);
    }
    cl->stalled = NO_LANE;
}

/* ------------------------------------------------------------------ load models */

/* The open model's generator: every intended start that is due, while a slot is free. */
static void start_open(zclient *cl, uint64_t now) {
    const phase_t *p = cl->ph;
    while (!cl->generator_done && cl->stalled == NO_LANE && cl->in_flight < cl->a->concurrency) {
        if (cl->next_intended >= p->deadline || now >= p->deadline) {
            cl->generator_done = true; /* still waiting at the deadline: offered, not started */
            for (uint64_t i = cl->next_intended; i < p->deadline; i = schedule_next(&cl->sched)) cl->t->offered++;
            return;
        }
        if (cl->next_intended > now) return;
        cl->t->offered++;
        op_begin(cl, NO_LANE, cl->next_intended);
        cl->next_intended = schedule_next(&cl->sched);
        now = now_ns();
    }
}

/* Starts what the model may start now; one round of ready lanes at a time, so replies are read
 * between rounds. */
static void start_due(zclient *cl) {
    const phase_t *p = cl->ph;
    uint64_t now = now_ns();
    if (cl->stalled != NO_LANE) return;
    if (p->kind == RUN_VALIDATE || p->load == LOAD_OPEN) {
        if (p->load == LOAD_OPEN && p->kind != RUN_VALIDATE) start_open(cl, now);
        return;
    }
    if (p->load == LOAD_BACKPRESSURE) {
        for (uint32_t k = 0; k < 4096 && !cl->stop_starting && now < p->deadline &&
                             cl->in_flight < cl->a->max_in_flight && cl->stalled == NO_LANE; k++) {
            op_begin(cl, NO_LANE, 0);
            now = now_ns();
        }
        return;
    }
    for (uint32_t round = cl->r_len; round > 0 && cl->stalled == NO_LANE; round--) {
        uint32_t lane = cl->ready[cl->r_head];
        cl->r_head = (cl->r_head + 1) % cl->lanes;
        cl->r_len--;
        if (now_ns() >= p->deadline) continue; /* no start at or after the deadline */
        op_begin(cl, lane, 0);
    }
}

/* Whether the phase is over: nothing in flight and nothing more can start. */
static bool phase_done(const zclient *cl, uint64_t now) {
    const phase_t *p = cl->ph;
    if (cl->in_flight > 0) return false;
    if (p->kind == RUN_VALIDATE) return true;
    if (now >= p->deadline) return true;
    switch (p->load) {
    case LOAD_BACKPRESSURE: return cl->stop_starting;
    case LOAD_OPEN: return cl->generator_done;
    default: return cl->r_len == 0;
    }
}

/* Until when the loop may wait (now or earlier: do not wait). */
static uint64_t wait_until(const zclient *cl, uint64_t now) {
    const phase_t *p = cl->ph;
    uint64_t until = p->drain_end;
    if (cl->stalled != NO_LANE) return now + STALL_RETRY_NS < until ? now + STALL_RETRY_NS : until;
    if (now < p->deadline) {
        if (p->load == LOAD_BACKPRESSURE && !cl->stop_starting && cl->in_flight < cl->a->max_in_flight) return now;
        if (p->load != LOAD_OPEN && p->load != LOAD_BACKPRESSURE && cl->r_len > 0) return now;
        if (p->load == LOAD_OPEN && !cl->generator_done) {
            uint64_t next = cl->next_intended < p->deadline ? cl->next_intended : p->deadline;
            return next > OPEN_SPIN_NS ? next - OPEN_SPIN_NS : now;
        }
        if (p->deadline < until) until = p->deadline;
    }
    return until;
}

/* Waits until `until` (ns, CLOCK_MONOTONIC) or until the data socket has `events`: ppoll on
 * libzmq's ZMQ_FD (its edge-triggered signal, so ZMQ_EVENTS is read first), which keeps
 * nanosecond timeouts where zmq_poll rounds to milliseconds. */
static void wait_for(zclient *cl, short events, uint64_t until) {
    uint64_t now = now_ns();
    if (until <= now) return;
    uint64_t left = until - now;
    struct timespec ts = {(time_t)(left / NS_PER_SEC), (long)(left % NS_PER_SEC)};
    if (!events) {
        nanosleep(&ts, NULL);
        return;
    }
    int ev = 0, fd = -1;
    size_t len = sizeof ev;
    if (zmq_getsockopt(cl->data, ZMQ_EVENTS, &ev, &len) == 0 && (ev & events)) return;
    len = sizeof fd;
    if (zmq_getsockopt(cl->data, ZMQ_FD, &fd, &len) != 0) {
        nanosleep(&ts, NULL);
        return;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR) diag("ppoll on ZMQ_FD: %s", strerror(errno));
}

/* ------------------------------------------------------------------ phases */

static void setup_phase(zclient *cl, const phase_t *p, tally_t *out) {
    cl->ph = p;
    cl->t = out;
    bool validate = p->kind == RUN_VALIDATE;
    cl->lanes = validate ? 1 : client_lanes(cl->a);
    cl->r_head = cl->r_len = 0;
    memset(cl->lane_ops, 0, cl->lanes * sizeof *cl->lane_ops);
    cl->next_seq = 0;
    cl->stop_starting = cl->generator_done = false;
    cl->stalled = NO_LANE;
    if (!validate && p->load == LOAD_OPEN) {
        schedule_init(&cl->sched, cl->a->arrival, cl->a->rate, cl->a->seed, p->t0);
        cl->next_intended = schedule_next(&cl->sched);
    }
    bool lanes = p->load == LOAD_CLOSED || p->load == LOAD_WINDOW || p->load == LOAD_SEND_SATURATION;
    if (validate) op_begin(cl, 0, 0);
    else if (lanes)
        for (uint32_t i = 0; i < cl->lanes; i++) lane_ready(cl, i);
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* The zmq_poll loop of one phase: start what is due, wait for replies (unary) or for the
 * socket to take the stalled message, until every admitted operation ended or the drain bound. */
static void run_phase(void *self, const phase_t *p, tally_t *out) {
    zclient *cl = self;
    uint64_t cpu0 = thread_cpu_ns();
    setup_phase(cl, p, out);
    bool unary = cl->w->shape == SHAPE_UNARY;
    for (;;) {
        start_due(cl);
        uint64_t now = now_ns();
        if (phase_done(cl, now)) break;
        if (now >= p->drain_end) {
            time_out(cl);
            break;
        }
        short events = (short)((unary ? ZMQ_POLLIN : 0) | (cl->stalled != NO_LANE ? ZMQ_POLLOUT : 0));
        wait_for(cl, events, wait_until(cl, now));
        if (unary) read_replies(cl);
        if (cl->stalled != NO_LANE) op_send(cl, cl->stalled);
    }
    if (p->kind != RUN_VALIDATE && p->load == LOAD_SEND_SATURATION) out->max_in_flight = cl->lanes;
    if (p->kind == RUN_MEASURE) {
        out->has_submit_cpu = true;
        out->submit_cpu_ns = thread_cpu_ns() - cpu0;
    }
}

/* ------------------------------------------------------------------ connection */

/* Sends HELLO to the server's routing id until the connection's handshake is done (the ROUTER
 * answers EHOSTUNREACH until then), every 1 ms, within the connect bound. */
static bool hello(void *sock, const char *server_id, const char *ep, uint64_t deadline, failure_t *f) {
    zframe frames[2] = {{(const uint8_t *)server_id, strlen(server_id)}, {(const uint8_t *)ZMQ_HELLO, ZMQ_HELLO_LEN}};
    for (;;) {
        int e = zmq_send_frames(sock, frames, 2);
        if (e == 0) return true;
        if (e != EHOSTUNREACH && e != EAGAIN) {
            fail_set(f, CODE_CONNECT, "HELLO to %s failed: %s", ep, zmq_strerror(e));
            return false;
        }
        if (now_ns() >= deadline) {
            fail_set(f, CODE_CONNECT, "no ZMTP connection to %s within 30 s (the HELLO stayed unroutable: %s)",
                     ep, zmq_strerror(e));
            return false;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* The server's answer to the request endpoint's HELLO: [HELLO][command port]. */
static bool hello_answer(zclient *cl, uint64_t deadline, char *port, size_t portlen, failure_t *f) {
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline) {
            fail_set(f, CODE_CONNECT, "%s did not answer the HELLO within 30 s", cl->req_ep);
            return false;
        }
        zmq_pollitem_t item = {cl->req, 0, ZMQ_POLLIN, 0};
        zmq_poll(&item, 1, (long)((deadline - now) / NS_PER_MS + 1));
        zmq_in in;
        if (!zmq_in_recv(cl->req, &in)) continue;
        zframe fr[ZMQ_MAX_FRAMES];
        size_t n = zmq_in_frames(&in, fr);
        bool ok = n == 2 && fr[0].len == ZMQ_HELLO_LEN && memcmp(fr[0].data, ZMQ_HELLO, ZMQ_HELLO_LEN) == 0 &&
                  fr[1].len > 0 && fr[1].len < portlen;
        if (ok) {
            memcpy(port, fr[1].data, fr[1].len);
            port[fr[1].len] = 0;
            ok = strspn(port, "0123456789") == fr[1].len;
        }
        char text[400];
        if (!ok) zmq_describe_frames(fr, n, text, sizeof text);
        zmq_in_close(&in);
        if (!ok) {
            fail_set(f, CODE_INVALID, "the answer to HELLO from %s is not [HELLO][port]: %s", cl->req_ep, text);
            return false;
        }
        return true;
    }
}

static bool do_connect(void *self, failure_t *f) {
    zclient *cl = self;
    uint64_t deadline = now_ns() + CONNECT_BOUND_NS;
    if (zmq_connect(cl->req, cl->req_ep) != 0) {
        fail_set(f, CODE_CONNECT, "zmq_connect %s: %s", cl->req_ep, zmq_strerror(errno));
        return false;
    }
    char port[16];
    if (!hello(cl->req, ZMQ_REQUEST_ROUTING_ID, cl->req_ep, deadline, f) ||
        !hello_answer(cl, deadline, port, sizeof port, f))
        return false;
    /* the command endpoint: the server's host, the port it named */
    char *colon = strrchr(cl->cmd_ep, ':');
    snprintf(colon + 1, sizeof cl->cmd_ep - (size_t)(colon + 1 - cl->cmd_ep), "%s", port);
    if (zmq_connect(cl->cmd, cl->cmd_ep) != 0) {
        fail_set(f, CODE_CONNECT, "zmq_connect %s: %s", cl->cmd_ep, zmq_strerror(errno));
        return false;
    }
    return hello(cl->cmd, ZMQ_COMMAND_ROUTING_ID, cl->cmd_ep, deadline, f);
}

static void do_close(void *self) {
    zclient *cl = self;
    zmq_close(cl->req);
    zmq_close(cl->cmd);
    zmq_ctx_term(cl->ctx); /* linger 0: returns at once */
}

/* ------------------------------------------------------------------ conformance faults */

#define MALFORMED_ID 0x8000000000000000ULL

/* The server's answer to the malformed request: INVALID_ARGUMENT passes. */
static bool judge_reply(zclient *cl, uint64_t deadline, failure_t *f) {
    const char *what = client_fault_describe(cl->a->fault);
    for (uint64_t now = now_ns(); now < deadline; now = now_ns()) {
        zmq_pollitem_t item = {cl->req, 0, ZMQ_POLLIN, 0};
        zmq_poll(&item, 1, (long)((deadline - now) / NS_PER_MS + 1));
        zmq_in in;
        if (!zmq_in_recv(cl->req, &in)) continue;
        zframe fr[ZMQ_MAX_FRAMES];
        size_t n = zmq_in_frames(&in, fr);
        uint64_t id = 0;
        bool ok = zmq_reply_id(fr, n, &id, f) && id == MALFORMED_ID;
        pb_status *st = ok ? rpcarena__bench__v1__status__unpack(NULL, fr[1].len, fr[1].data) : NULL;
        uint32_t code = st ? st->code : 0;
        if (st && code != 0 && code != 3)
            fail_set(f, CODE_RPC, "the server answered a malformed call (--conformance-fault %s: %s) with status %u (%s); expected INVALID_ARGUMENT (3)",
                     client_fault_name(cl->a->fault), what, code, st->message ? st->message : "");
        else if (st && code == 0)
            fail_set(f, CODE_INVALID, "the server accepted a malformed call (--conformance-fault %s: %s) and ended it with status OK after 1 response message(s); it must answer INVALID_ARGUMENT (3)",
                     client_fault_name(cl->a->fault), what);
        else if (ok && !st)
            fail_set(f, CODE_INVALID, "the Status frame of the answer to the malformed call does not decode");
        if (st) rpcarena__bench__v1__status__free_unpacked(st, NULL);
        zmq_in_close(&in);
        return st && code == 3;
    }
    fail_set(f, CODE_TIMEOUT, "no reply from %s to the malformed call within 30 s", cl->req_ep);
    return false;
}

/* --conformance-fault: one malformed request (unary: answered INVALID_ARGUMENT, or the check
 * fails) or command (no answer: the kit asks the server), then one well-formed operation. */
static bool fault_check(void *self, failure_t *f) {
    zclient *cl = self;
    diag("conformance fault %s: this client sends a malformed %s on purpose; never measure with it",
         client_fault_name(cl->a->fault), cl->w->shape == SHAPE_SEND ? "command" : "request");
    if (!pack_request_body(cl, 0, cl->a->fault)) {
        fail_set(f, CODE_INTERNAL, "cannot build the malformed request");
        return false;
    }
    uint8_t id[ZMQ_ID_BYTES];
    zmq_put_id(id, MALFORMED_ID);
    zframe frames[3] = {{(const uint8_t *)cl->data_id, strlen(cl->data_id)}, {id, ZMQ_ID_BYTES},
                        {cl->packed.data, cl->packed.len}};
    uint64_t deadline = now_ns() + CONNECT_BOUND_NS;
    int e;
    while ((e = zmq_send_frames(cl->data, frames, 3)) == EAGAIN && now_ns() < deadline) {
        zmq_pollitem_t item = {cl->data, 0, ZMQ_POLLOUT, 0};
        zmq_poll(&item, 1, 1);
    }
    if (e != 0) {
        fail_set(f, CODE_CONNECT, "sending the malformed request to %s failed: %s", data_ep(cl), zmq_strerror(e));
        return false;
    }
    if (cl->w->shape == SHAPE_UNARY && !judge_reply(cl, deadline, f)) return false;
    phase_t p;
    tally_t t;
    phase_make(&p, RUN_VALIDATE, cl->a, now_ns());
    tally_init(&t, &p);
    run_phase(cl, &p, &t);
    bool ok = t.failed == 0 && t.completed == 1;
    if (!ok) fail_set(f, t.has_failure ? t.first_code : CODE_INTERNAL, "the well-formed %s after the malformed one failed: %s",
                      cl->w->shape == SHAPE_SEND ? "command" : "request", t.has_failure ? t.first_failure : "it did not complete");
    tally_free(&t);
    /* the commands must leave before the process does: let close wait for them (up to 2 s) */
    int linger = 2000;
    zmq_setsockopt(cl->cmd, ZMQ_LINGER, &linger, sizeof linger);
    return ok;
}

/* ------------------------------------------------------------------ construction */

static void transport_none(void *self, tstats *out) {
    (void)self;
    out->present = false; /* libzmq gives no access to its TCP sockets */
}

bool zmq_client_new(const client_args *a, const workload_t *w, client_stack *out, failure_t *f) {
    zclient *cl = calloc(1, sizeof *cl);
    uint32_t lanes = client_lanes(a);
    if (cl) cl->ready = calloc(lanes, sizeof *cl->ready);
    if (cl) cl->lane_ops = calloc(lanes, sizeof *cl->lane_ops);
    if (!cl || !cl->ready || !cl->lane_ops) {
        fail_set(f, CODE_INTERNAL, "out of memory for %u lanes", lanes);
        return false;
    }
    cl->a = a;
    cl->w = w;
    addr_t addr;
    char err[300], text[ARG_TEXT];
    if (!resolve_host_port(a->server, &addr, err, sizeof err)) {
        fail_set(f, CODE_CONFIG, "--server %s: %s", a->server, err);
        return false;
    }
    addr_format(&addr, text, sizeof text);
    zmq_endpoint(text, cl->req_ep, sizeof cl->req_ep);
    zmq_endpoint(text, cl->cmd_ep, sizeof cl->cmd_ep); /* its port comes with the hello */
    bool v6 = addr.ss.ss_family == AF_INET6;
    cl->ctx = zmq_ctx_new(); /* one I/O thread: libzmq's default */
    cl->req = cl->ctx ? zmq_router(cl->ctx, v6, NULL, err, sizeof err) : NULL;
    cl->cmd = cl->req ? zmq_router(cl->ctx, v6, NULL, err, sizeof err) : NULL;
    if (!cl->cmd) {
        fail_set(f, CODE_INTERNAL, "%s", cl->ctx ? err : "zmq_ctx_new failed");
        return false;
    }
    bool unary = w->shape == SHAPE_UNARY;
    cl->data = unary ? cl->req : cl->cmd;
    cl->data_id = unary ? ZMQ_REQUEST_ROUTING_ID : ZMQ_COMMAND_ROUTING_ID;
    cl->stalled = NO_LANE;
    out->self = cl;
    out->connect = do_connect;
    out->run = run_phase;
    out->close = do_close;
    out->transport = transport_none;
    out->fault_check = fault_check;
    out->connections = 2;
    return true;
}
