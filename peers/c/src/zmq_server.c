/* The zmq stack's server (docs/stacks.md "zmq") on libzmq's C API: two ROUTER sockets, the
 * request endpoint at --listen and the command endpoint on a free port of the same host, served
 * by one thread in a zmq_poll loop (an eventfd wakes it at SHUTDOWN). Every request and command
 * is validated (docs/peer-protocol.md "Validation duties"). A reply waits while the client is at
 * its high-water mark (the push-back reaches the client); one the client can no longer receive
 * (EHOSTUNREACH) is counted in `dropped`. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "control.h"
#include "fault.h"
#include "netutil.h"
#include "server.h"
#include "zmq_common.h"

/* Messages handled per socket before the loop looks at the other one. */
#define BATCH 256

typedef struct {
    void *ctx, *req, *cmd;
    int stop_fd;
    char cmd_port[8];
    server_fault fault;
    structured_t scratch;
    buf_t status, response, extra;
} zserver;

static atomic_ullong z_rpcs, z_requests, z_responses, z_rejected, z_commands, z_dropped;

static void read_counters(server_counters *out) {
    *out = (server_counters){0};
    out->rpcs = atomic_load_explicit(&z_rpcs, memory_order_relaxed);
    out->requests = atomic_load_explicit(&z_requests, memory_order_relaxed);
    out->responses = atomic_load_explicit(&z_responses, memory_order_relaxed);
    out->rejected = atomic_load_explicit(&z_rejected, memory_order_relaxed);
    out->commands = atomic_load_explicit(&z_commands, memory_order_relaxed);
    out->dropped = atomic_load_explicit(&z_dropped, memory_order_relaxed);
    out->has_dropped = true;
    out->first_rejection = server_first_rejection();
}

static void rejected(const char *endpoint, const char *why, const zframe *frames, size_t n) {
    char text[600];
    zmq_describe_frames(frames, n, text, sizeof text);
    count_one(&z_rejected);
    server_note_rejection("%s endpoint: %s; %s", endpoint, why, text);
}

/* Sends a multipart message, waiting while the client's queue is at its high-water mark (as a
 * blocking send would: nothing else is read meanwhile, so the push-back reaches the client),
 * but still woken by SHUTDOWN. 0, or the errno that ended it (ECANCELED: shutting down). */
static int send_waiting(zserver *z, const zframe *frames, size_t n) {
    for (;;) {
        int e = zmq_send_frames(z->req, frames, n);
        if (e != EAGAIN) return e;
        zmq_pollitem_t items[2] = {{z->req, 0, ZMQ_POLLOUT, 0}, {NULL, z->stop_fd, ZMQ_POLLIN, 0}};
        /* ROUTER's POLLOUT says some peer has room, not necessarily this one: retry each ms */
        if (zmq_poll(items, 2, 1) > 0 && items[1].revents) return ECANCELED;
    }
}

/* Sends a reply; one the client cannot receive (it is gone: EHOSTUNREACH) is counted in
 * `dropped`, never silent (docs/stacks.md "zmq": replies go without ZMQ_DONTWAIT). */
static void reply(zserver *z, const zframe *rid, const zframe *frames, size_t n, uint64_t id) {
    zframe all[5];
    all[0] = *rid;
    memcpy(all + 1, frames, n * sizeof *frames);
    int e = send_waiting(z, all, n + 1);
    if (e == 0) {
        count_one(&z_responses);
        return;
    }
    if (e == ECANCELED) return; /* SHUTDOWN while the client's queue was full */
    count_one(&z_dropped);
    server_note_rejection("the reply to id %" PRIu64 " was dropped: %s (%s)", id,
                          e == EHOSTUNREACH ? "the client is not connected" : "the send failed",
                          zmq_strerror(e));
}

/* [id][Status code][] for a rejection or a fault's status. */
static void reply_status(zserver *z, const zframe *rid, const zframe *idf, uint32_t code,
                         const char *message) {
    zmq_pack_status(code, message, &z->status);
    zframe frames[3] = {*idf, {z->status.data, z->status.len}, {NULL, 0}};
    reply(z, rid, frames, 3, zmq_get_id(idf->data));
}

static bool pack_response_into(zserver *z, const pb_request *req, uint64_t seq, buf_t *out) {
    pb_response r;
    fault_owned owned = {0};
    bool ok = build_response(&z->scratch, (payload_kind)req->payload_kind, seq, req->response_size, &r) &&
              fault_response(z->fault, &r, &z->scratch, &owned);
    size_t n = ok ? response_size_of(&r) : 0;
    out->len = out->off = 0;
    ok = ok && buf_reserve(out, n ? n : 1);
    if (ok) out->len = pack_response(&r, out->data);
    fault_owned_free(&owned);
    return ok;
}

/* The answer to a valid request: [id][Status][Response], as the fault mode (if any) shapes it. */
static void answer(zserver *z, const zframe *rid, const zframe *idf, const pb_request *req) {
    switch (z->fault) {
    case SF_ERROR_STATUS:
        reply_status(z, rid, idf, 13, "conformance fault error-status: INTERNAL instead of the answer");
        return;
    case SF_WRONG_SUMMARY:
        reply_status(z, rid, idf, 13, "conformance fault wrong-summary applies to client_stream calls only");
        return;
    case SF_MISSING_MESSAGE:
    case SF_EARLY_STATUS:
        reply_status(z, rid, idf, 0, NULL); /* an empty third frame: the empty Response */
        return;
    default: break;
    }
    if (!pack_response_into(z, req, req->seq, &z->response)) {
        reply_status(z, rid, idf, 13, "cannot build the response");
        return;
    }
    zframe frames[4] = {*idf, {NULL, 0}, {z->response.data, z->response.len}, {NULL, 0}};
    size_t n = 3;
    if (z->fault == SF_EXTRA_MESSAGE && pack_response_into(z, req, req->seq + 1, &z->extra)) {
        frames[3] = (zframe){z->extra.data, z->extra.len};
        n = 4; /* the Response a stream would send next: a reply of 4 frames */
    }
    reply(z, rid, frames, n, zmq_get_id(idf->data));
}

/* Decodes (and, unless the fault skips it, validates) a request or command. */
static pb_request *accept_body(zserver *z, shape_kind shape, const zframe *body, char *why, size_t whylen) {
    pb_request *req = NULL;
    if (z->fault == SF_SKIP_VALIDATION) {
        req = rpcarena__bench__v1__request__unpack(NULL, body->len, body->data);
        if (!req) snprintf(why, whylen, "the body is not a valid rpcarena.bench.v1.Request (%zu bytes)", body->len);
        return req;
    }
    serve_t v;
    serve_init(&v, shape);
    return serve_on_request(&v, body->data, body->len, &req, why, whylen) ? req : NULL;
}

static void on_request(zserver *z, const zframe *rid, const zframe *frames, size_t n, size_t seen) {
    zinbound in;
    zmq_parse_inbound(frames, seen, &in);
    if (in.kind == ZIN_HELLO) { /* [HELLO][command endpoint's port] */
        zframe hello[2] = {{(const uint8_t *)ZMQ_HELLO, ZMQ_HELLO_LEN},
                           {(const uint8_t *)z->cmd_port, strlen(z->cmd_port)}};
        zframe all[3] = {*rid, hello[0], hello[1]};
        if (send_waiting(z, all, 3) != 0) diag("zmq: could not answer a HELLO");
        return;
    }
    count_one(&z_rpcs);
    count_one(&z_requests);
    char why[400];
    if (in.kind == ZIN_MALFORMED) {
        rejected("request", in.why, frames, n);
        if (in.id_ok) reply_status(z, rid, &frames[0], 3, in.why);
        return;
    }
    pb_request *req = accept_body(z, SHAPE_UNARY, &in.body, why, sizeof why);
    if (!req) {
        rejected("request", why, frames, n);
        reply_status(z, rid, &frames[0], 3, why);
        return;
    }
    answer(z, rid, &frames[0], req);
    pb_request_free(req);
}

static void on_command(zserver *z, const zframe *frames, size_t n, size_t seen) {
    zinbound in;
    zmq_parse_inbound(frames, seen, &in);
    if (in.kind == ZIN_HELLO) return; /* counted nowhere, answered with nothing */
    count_one(&z_rpcs);
    count_one(&z_requests);
    if (in.kind == ZIN_MALFORMED) {
        rejected("command", in.why, frames, n);
        return;
    }
    char why[400];
    pb_request *req = accept_body(z, SHAPE_SEND, &in.body, why, sizeof why);
    if (!req) {
        rejected("command", why, frames, n);
        return;
    }
    count_one(&z_commands);
    pb_request_free(req);
}

/* Handles up to BATCH queued messages of one socket. */
static void drain(zserver *z, void *sock) {
    zmq_in in;
    for (int k = 0; k < BATCH && zmq_in_recv(sock, &in); k++) {
        zframe frames[ZMQ_MAX_FRAMES];
        size_t n = zmq_in_frames(&in, frames), seen = in.total ? in.total - 1 : 0;
        zframe rid = {zmq_msg_data(&in.msgs[0]), zmq_msg_size(&in.msgs[0])};
        if (sock == z->req) on_request(z, &rid, frames, n, seen);
        else on_command(z, frames, n, seen);
        zmq_in_close(&in);
    }
}

static void *serve_loop(void *arg) {
    zserver *z = arg;
    prctl(PR_SET_NAME, "zmq-server", 0, 0, 0);
    zmq_pollitem_t items[3] = {{z->req, 0, ZMQ_POLLIN, 0}, {z->cmd, 0, ZMQ_POLLIN, 0},
                               {NULL, z->stop_fd, ZMQ_POLLIN, 0}};
    for (;;) {
        if (zmq_poll(items, 3, -1) < 0) {
            if (errno == EINTR) continue;
            diag("zmq_poll: %s", zmq_strerror(errno));
            break;
        }
        if (items[2].revents) break;
        if (items[0].revents & ZMQ_POLLIN) drain(z, z->req);
        if (items[1].revents & ZMQ_POLLIN) drain(z, z->cmd);
    }
    return NULL;
}

/* Binds a ROUTER at `endpoint`; returns the endpoint bound (port resolved) in `bound`. */
static void *bind_router(zserver *z, bool v6, const char *id, const char *endpoint, char *bound, size_t cap) {
    char err[300];
    void *s = zmq_router(z->ctx, v6, id, err, sizeof err);
    if (!s) out_error_exit(PH_LISTEN, CODE_INTERNAL, "%s", err);
    if (zmq_bind(s, endpoint) != 0)
        out_error_exit(PH_LISTEN, CODE_CONFIG, "--listen: zmq cannot bind %s (%s)", endpoint, zmq_strerror(errno));
    size_t len = cap;
    if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, bound, &len) != 0)
        out_error_exit(PH_LISTEN, CODE_INTERNAL, "zmq_getsockopt(ZMQ_LAST_ENDPOINT): %s", zmq_strerror(errno));
    return s;
}

_Noreturn void zmq_server_main(const server_args *a) {
    static zserver z;
    z.fault = a->fault;
    if (z.fault != SF_NONE)
        diag("conformance fault %s: this server misbehaves on purpose; never measure with it",
             server_fault_name(z.fault));
    addr_t addr;
    char err[300], text[ARG_TEXT], ep[ARG_TEXT + 16], bound[ARG_TEXT + 16];
    if (!resolve_host_port(a->listen, &addr, err, sizeof err))
        out_error_exit(PH_LISTEN, CODE_CONFIG, "--listen %s: %s", a->listen, err);
    bool v6 = addr.ss.ss_family == AF_INET6;
    addr_format(&addr, text, sizeof text);
    z.ctx = zmq_ctx_new();
    if (!z.ctx) out_error_exit(PH_LISTEN, CODE_INTERNAL, "zmq_ctx_new: %s", zmq_strerror(errno));
    zmq_endpoint(text, ep, sizeof ep);
    z.req = bind_router(&z, v6, ZMQ_REQUEST_ROUTING_ID, ep, bound, sizeof bound);
    char address[ARG_TEXT + 16];
    snprintf(address, sizeof address, "%s", strncmp(bound, "tcp://", 6) == 0 ? bound + 6 : bound);
    /* the command endpoint: the same host, any free port */
    char *colon = strrchr(text, ':');
    snprintf(colon + 1, sizeof text - (size_t)(colon + 1 - text), "0");
    zmq_endpoint(text, ep, sizeof ep);
    z.cmd = bind_router(&z, v6, ZMQ_COMMAND_ROUTING_ID, ep, bound, sizeof bound);
    snprintf(z.cmd_port, sizeof z.cmd_port, "%s", strrchr(bound, ':') + 1);
    z.stop_fd = eventfd(0, EFD_CLOEXEC);
    pthread_t loop;
    if (z.stop_fd < 0 || pthread_create(&loop, NULL, serve_loop, &z) != 0)
        out_error_exit(PH_LISTEN, CODE_INTERNAL, "cannot start the zmq server thread");
    server_ready(address, read_counters);

    (void)control_wait(NULL); /* SHUTDOWN or end of stdin */
    uint64_t one = 1;
    if (write(z.stop_fd, &one, sizeof one) != sizeof one) diag("cannot wake the zmq server thread");
    pthread_join(loop, NULL);
    zmq_close(z.req);
    zmq_close(z.cmd);
    zmq_ctx_term(z.ctx); /* linger 0: nothing waits */
    server_stopped(read_counters);
}
