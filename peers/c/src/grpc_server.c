/* The grpc stack's server on gRPC core's C API: the four methods registered, one worker thread
 * per CPU, each with its own completion queue on which it requests calls, so that a call and
 * all its batches live on one thread. Every request is validated (docs/peer-protocol.md
 * "Validation duties") and a bad one is answered with INVALID_ARGUMENT. */
#include <arpa/inet.h>
#include <netinet/in.h>
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
#include <unistd.h>

#include "control.h"
#include "grpc_common.h"
#include "json.h"
#include "netutil.h"
#include "server.h"
#include "workload.h"

/* Calls each worker keeps requested per method, so that bursts find a call object ready. */
#define REQUESTS_PER_METHOD 64
#define UNKNOWN_METHOD -1

enum { T_NEW, T_RECV, T_SEND, T_CLOSE };

struct scall;
typedef struct {
    struct scall *c;
    int kind;
} stag;

struct sworker;

typedef struct scall {
    struct sworker *wk;
    int method; /* shape, or UNKNOWN_METHOD */
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_call_details details;
    grpc_byte_buffer *payload; /* unary and server stream: the request */
    grpc_byte_buffer *recv_buf, *send_buf;
    stag tnew, trecv, tsend, tclose;
    int pending;
    int cancelled;
    bool sim_sent, status_sent, end_seen, send_busy, reject;
    char why[400];
    grpc_status_code reject_code;
    serve_t v;
    structured_t scratch;
    /* responses still to send: bidi (seqs of validated requests), server stream (indexes) */
    uint64_t *queue;
    size_t qhead, qtail, qcap;
    uint64_t stream_next, stream_total;
    payload_kind kind;
    uint32_t response_size;
} scall;

/* A worker thread and what it counted so far (read by the stdin thread for the window events,
 * so the counters are atomics bumped as each message goes, and each worker has its own cache
 * line). */
typedef struct sworker {
    _Alignas(64) unsigned index;
    grpc_completion_queue *cq;
    pthread_t thread;
    atomic_ullong rpcs, requests, responses, rejected, commands;
} sworker;

static grpc_server *server;
static void *method_handles[SHAPE_COUNT];
static sworker *workers;
static unsigned n_workers;

static void request_call(sworker *wk, int method);

/* The counters of every worker, summed (the window events and `stopped`). */
static void read_counters(server_counters *out) {
    *out = (server_counters){0};
    for (unsigned i = 0; i < n_workers; i++) {
        out->rpcs += atomic_load_explicit(&workers[i].rpcs, memory_order_relaxed);
        out->requests += atomic_load_explicit(&workers[i].requests, memory_order_relaxed);
        out->responses += atomic_load_explicit(&workers[i].responses, memory_order_relaxed);
        out->rejected += atomic_load_explicit(&workers[i].rejected, memory_order_relaxed);
        out->commands += atomic_load_explicit(&workers[i].commands, memory_order_relaxed);
    }
    out->first_rejection = server_first_rejection();
}

/* ------------------------------------------------------------------ batches */

static void batch(scall *c, grpc_op *ops, size_t n, stag *tag) {
    c->pending++;
    if (grpc_call_start_batch(c->call, ops, n, tag, NULL) != GRPC_CALL_OK) {
        c->pending--;
        grpc_call_cancel(c->call, NULL);
    }
}

static void recv_next(scall *c) {
    grpc_op o;
    memset(&o, 0, sizeof o);
    o.op = GRPC_OP_RECV_MESSAGE;
    o.data.recv_message.recv_message = &c->recv_buf;
    batch(c, &o, 1, &c->trecv);
}

/* Sends `message` (may be NULL), preceded by the initial metadata once, followed by status OK
 * when `last`. */
static void send_ops(scall *c, grpc_byte_buffer *message, bool last, grpc_status_code code,
                     const char *text) {
    grpc_op ops[3];
    memset(ops, 0, sizeof ops);
    size_t k = 0;
    static grpc_slice empty_details;
    if (!c->sim_sent) {
        ops[k++].op = GRPC_OP_SEND_INITIAL_METADATA;
        c->sim_sent = true;
    }
    if (message) {
        ops[k].op = GRPC_OP_SEND_MESSAGE;
        ops[k].data.send_message.send_message = message;
        k++;
        c->send_buf = message;
    }
    grpc_slice details = empty_details;
    if (last) {
        ops[k].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        ops[k].data.send_status_from_server.status = code;
        ops[k].data.send_status_from_server.trailing_metadata_count = 0;
        if (text && *text) details = grpc_slice_from_copied_string(text);
        ops[k].data.send_status_from_server.status_details = text && *text ? &details : NULL;
        k++;
        c->status_sent = true;
    }
    c->send_busy = true;
    batch(c, ops, k, &c->tsend);
    if (last && text && *text) grpc_slice_unref(details); /* core copied what it needs */
}

static grpc_byte_buffer *packed(size_t n, void (*pack)(const void *, uint8_t *), const void *msg) {
    grpc_slice s = grpc_slice_malloc(n);
    pack(msg, GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer *b = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return b;
}

static void pack_resp(const void *m, uint8_t *out) { pack_response(m, out); }
static void pack_sum(const void *m, uint8_t *out) { pack_summary(m, out); }

static grpc_byte_buffer *response_buffer(scall *c, uint64_t seq) {
    pb_response r;
    if (!build_response(&c->scratch, c->kind, seq, c->response_size, &r)) return NULL;
    return packed(response_size_of(&r), pack_resp, &r);
}

static void reject(scall *c, grpc_status_code code, const char *why) {
    if (c->reject || c->status_sent) return;
    c->reject = true;
    count_one(&c->wk->rejected);
    c->reject_code = code;
    snprintf(c->why, sizeof c->why, "%s", why);
    diag("rejected a call with status %d: %s", (int)code, why);
    server_note_rejection("%s on %s: %s", grpc_status_name(code),
                          c->method == UNKNOWN_METHOD ? "an unknown method" : method_path((shape_kind)c->method),
                          why);
    if (!c->send_busy) send_ops(c, NULL, true, code, c->why);
}

/* Sends what is due: the next queued response, or the final status. */
static void pump(scall *c) {
    if (c->send_busy || c->status_sent) return;
    if (c->reject) {
        send_ops(c, NULL, true, c->reject_code, c->why);
        return;
    }
    bool more = c->qhead < c->qtail;
    if (more) {
        uint64_t seq = c->queue[c->qhead++];
        grpc_byte_buffer *b = response_buffer(c, seq);
        if (!b) {
            reject(c, GRPC_STATUS_INTERNAL, "cannot build a response");
            return;
        }
        count_one(&c->wk->responses);
        bool last = c->end_seen && c->qhead == c->qtail &&
                    !(c->method == SHAPE_SERVER_STREAM && c->stream_next < c->stream_total);
        send_ops(c, b, last, GRPC_STATUS_OK, NULL);
        return;
    }
    if (c->end_seen) send_ops(c, NULL, true, GRPC_STATUS_OK, NULL);
}

static bool enqueue(scall *c, uint64_t seq) {
    if (c->qtail == c->qcap) {
        if (c->qhead > 0) {
            memmove(c->queue, c->queue + c->qhead, (c->qtail - c->qhead) * sizeof *c->queue);
            c->qtail -= c->qhead;
            c->qhead = 0;
        } else {
            size_t cap = c->qcap ? c->qcap * 2 : 16;
            uint64_t *q = realloc(c->queue, cap * sizeof *q);
            if (!q) return false;
            c->queue = q;
            c->qcap = cap;
        }
    }
    c->queue[c->qtail++] = seq;
    return true;
}

/* ------------------------------------------------------------------ requests */

static bool take(grpc_byte_buffer **buf, grpc_slice *out) {
    grpc_byte_buffer_reader r;
    bool ok = grpc_byte_buffer_reader_init(&r, *buf) != 0;
    if (ok) {
        *out = grpc_byte_buffer_reader_readall(&r);
        grpc_byte_buffer_reader_destroy(&r);
    }
    grpc_byte_buffer_destroy(*buf);
    *buf = NULL;
    return ok;
}

/* Validates one request; on success the request's fields shape what is sent. */
static bool accept_request(scall *c, grpc_byte_buffer **buf, pb_request **req) {
    grpc_slice s;
    char why[400];
    count_one(&c->wk->requests);
    if (!take(buf, &s)) {
        reject(c, GRPC_STATUS_INVALID_ARGUMENT, "unreadable request message");
        return false;
    }
    bool ok = serve_on_request(&c->v, GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s), req, why, sizeof why);
    grpc_slice_unref(s);
    if (!ok) {
        reject(c, GRPC_STATUS_INVALID_ARGUMENT, why);
        return false;
    }
    c->kind = c->v.kind;
    c->response_size = c->v.response_size;
    return true;
}

/* Command (1.3, shape send): validated as a unary request, counted, answered with Empty. */
static void command(scall *c) {
    c->end_seen = true;
    if (!c->payload) {
        reject(c, GRPC_STATUS_INVALID_ARGUMENT, "a send call carries one command, got none");
        return;
    }
    pb_request *req = NULL;
    if (!accept_request(c, &c->payload, &req)) return;
    pb_request_free(req);
    count_one(&c->wk->commands);
    count_one(&c->wk->responses);
    grpc_slice empty = grpc_empty_slice(); /* Empty encodes to no bytes */
    send_ops(c, grpc_raw_byte_buffer_create(&empty, 1), true, GRPC_STATUS_OK, NULL);
}

static void begin(scall *c) {
    grpc_op o;
    memset(&o, 0, sizeof o);
    o.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    o.data.recv_close_on_server.cancelled = &c->cancelled;
    batch(c, &o, 1, &c->tclose);
    count_one(&c->wk->rpcs);
    if (c->method == UNKNOWN_METHOD) {
        char path[256];
        slice_text(c->details.method, path, sizeof path);
        c->end_seen = true;
        reject(c, GRPC_STATUS_UNIMPLEMENTED, "unknown method");
        (void)path;
        return;
    }
    serve_init(&c->v, (shape_kind)c->method);
    if (c->method == SHAPE_SEND) {
        command(c);
        return;
    }
    if (c->method == SHAPE_UNARY || c->method == SHAPE_SERVER_STREAM) {
        char why[200];
        c->end_seen = true;
        if (!c->payload) {
            serve_on_end(&c->v, why, sizeof why);
            reject(c, GRPC_STATUS_INVALID_ARGUMENT, why);
            return;
        }
        pb_request *req = NULL;
        if (!accept_request(c, &c->payload, &req)) return;
        if (c->method == SHAPE_UNARY) {
            enqueue(c, req->seq);
        } else {
            c->stream_total = req->response_messages;
            c->stream_next = 0;
        }
        pb_request_free(req);
        if (c->method == SHAPE_UNARY) pump(c);
        else {
            /* server stream: responses 0..N-1, produced as the previous one is taken */
            enqueue(c, c->stream_next++);
            pump(c);
        }
        return;
    }
    recv_next(c);
}

static void on_recv(scall *c, bool ok) {
    if (!ok || !c->recv_buf) {
        c->end_seen = true;
        char why[200];
        if (!c->reject && !serve_on_end(&c->v, why, sizeof why)) reject(c, GRPC_STATUS_INVALID_ARGUMENT, why);
        if (c->method == SHAPE_CLIENT_STREAM && !c->reject) {
            pb_summary sum;
            if (!build_summary(&c->v, &c->scratch, &sum)) {
                reject(c, GRPC_STATUS_INTERNAL, "cannot build the summary");
                return;
            }
            count_one(&c->wk->responses);
            send_ops(c, packed(summary_size_of(&sum), pack_sum, &sum), true, GRPC_STATUS_OK, NULL);
            return;
        }
        pump(c);
        return;
    }
    if (c->reject) {
        grpc_byte_buffer_destroy(c->recv_buf);
        c->recv_buf = NULL;
        return;
    }
    pb_request *req = NULL;
    if (!accept_request(c, &c->recv_buf, &req)) return;
    uint64_t seq = req->seq;
    pb_request_free(req);
    if (c->method == SHAPE_BIDI) {
        if (!enqueue(c, seq)) {
            reject(c, GRPC_STATUS_INTERNAL, "out of memory");
            return;
        }
        pump(c);
    }
    recv_next(c);
}

static void on_send(scall *c, bool ok) {
    if (c->send_buf) {
        grpc_byte_buffer_destroy(c->send_buf);
        c->send_buf = NULL;
    }
    c->send_busy = false;
    if (!ok) {
        c->status_sent = true; /* the call is gone; nothing more to send */
        return;
    }
    if (c->method == SHAPE_SERVER_STREAM && !c->reject && c->stream_next < c->stream_total)
        enqueue(c, c->stream_next++);
    pump(c);
}

static scall *new_call(sworker *wk, int method) {
    scall *c = calloc(1, sizeof *c);
    if (!c) {
        diag("out of memory for a call");
        abort();
    }
    c->wk = wk;
    c->method = method;
    c->tnew = (stag){c, T_NEW};
    c->trecv = (stag){c, T_RECV};
    c->tsend = (stag){c, T_SEND};
    c->tclose = (stag){c, T_CLOSE};
    grpc_metadata_array_init(&c->md);
    grpc_call_details_init(&c->details);
    return c;
}

static void free_call(scall *c) {
    if (c->call) grpc_call_unref(c->call);
    if (c->payload) grpc_byte_buffer_destroy(c->payload);
    if (c->recv_buf) grpc_byte_buffer_destroy(c->recv_buf);
    grpc_metadata_array_destroy(&c->md);
    grpc_call_details_destroy(&c->details);
    structured_free(&c->scratch);
    free(c->queue);
    free(c);
}

static void request_call(sworker *wk, int method) {
    scall *c = new_call(wk, method);
    grpc_call_error e;
    if (method == UNKNOWN_METHOD)
        e = grpc_server_request_call(server, &c->call, &c->details, &c->md, wk->cq, wk->cq, &c->tnew);
    else
        e = grpc_server_request_registered_call(
            server, method_handles[method], &c->call, &c->deadline, &c->md,
            (method == SHAPE_UNARY || method == SHAPE_SERVER_STREAM || method == SHAPE_SEND)
                ? &c->payload
                : NULL,
            wk->cq,
            wk->cq, &c->tnew);
    if (e != GRPC_CALL_OK) free_call(c); /* the server is shutting down */
}

static void handle(stag *tag, bool ok) {
    scall *c = tag->c;
    switch (tag->kind) {
    case T_NEW:
        if (!ok) { /* shutdown */
            free_call(c);
            return;
        }
        request_call(c->wk, c->method);
        begin(c);
        break;
    case T_RECV:
        c->pending--;
        on_recv(c, ok);
        break;
    case T_SEND:
        c->pending--;
        on_send(c, ok);
        break;
    case T_CLOSE:
        c->pending--;
        if (c->cancelled) c->status_sent = true; /* nothing more can be sent */
        break;
    }
    if (c->pending == 0 && c->status_sent && !c->send_busy) free_call(c);
}

static void *worker_main(void *arg) {
    sworker *wk = arg;
    char name[16];
    snprintf(name, sizeof name, "grpc-server-%u", wk->index);
    prctl(PR_SET_NAME, name, 0, 0, 0);
    for (int m = 0; m < SHAPE_COUNT; m++)
        for (int k = 0; k < REQUESTS_PER_METHOD; k++) request_call(wk, m);
    for (int k = 0; k < 4; k++) request_call(wk, UNKNOWN_METHOD);
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(wk->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
        if (ev.type != GRPC_OP_COMPLETE) continue;
        if (ev.tag == NULL) continue; /* the server's shutdown notification */
        handle(ev.tag, ev.success != 0);
    }
    return NULL;
}

_Noreturn void grpc_server_main(const server_args *a, const char *cert_pem, const char *key_pem) {
    grpc_init();
    grpc_server_credentials *creds;
    if (cert_pem) {
        grpc_ssl_pem_key_cert_pair pair = {key_pem, cert_pem};
        creds = grpc_ssl_server_credentials_create_ex(NULL, &pair, 1,
                                                      GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, NULL);
    } else {
        creds = grpc_insecure_server_credentials_create(); /* --tls off: h2c */
    }
    if (!creds) out_error_exit(PH_STARTUP, CODE_CONFIG, "--cert/--key: gRPC refused the certificate or key");

    addr_t addr;
    char err[300], text[ARG_TEXT];
    if (!resolve_host_port(a->listen, &addr, err, sizeof err))
        out_error_exit(PH_LISTEN, CODE_CONFIG, "--listen %s: %s", a->listen, err);
    addr_format(&addr, text, sizeof text);

    server = grpc_server_create(grpc_peer_channel_args(false, NULL), NULL);
    for (int m = 0; m < SHAPE_COUNT; m++) {
        bool payload = m == SHAPE_UNARY || m == SHAPE_SERVER_STREAM || m == SHAPE_SEND;
        method_handles[m] = grpc_server_register_method(
            server, method_path((shape_kind)m), NULL,
            payload ? GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER : GRPC_SRM_PAYLOAD_NONE, 0);
    }
    n_workers = worker_count();
    workers = aligned_alloc(_Alignof(sworker), n_workers * sizeof *workers);
    if (!workers) out_error_exit(PH_LISTEN, CODE_INTERNAL, "out of memory for %u workers", n_workers);
    memset(workers, 0, n_workers * sizeof *workers);
    for (unsigned i = 0; i < n_workers; i++) {
        workers[i].index = i;
        workers[i].cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(server, workers[i].cq, NULL);
    }
    int port = grpc_server_add_http2_port(server, text, creds);
    if (port <= 0) out_error_exit(PH_LISTEN, CODE_CONFIG, "--listen %s: gRPC cannot bind it (in use, or not an address of this host)", a->listen);
    grpc_server_credentials_release(creds);
    grpc_server_start(server);
    for (unsigned i = 0; i < n_workers; i++)
        if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0)
            out_error_exit(PH_LISTEN, CODE_INTERNAL, "cannot start worker thread %u", i);

    if (addr.ss.ss_family == AF_INET6) ((struct sockaddr_in6 *)&addr.ss)->sin6_port = htons((uint16_t)port);
    else ((struct sockaddr_in *)&addr.ss)->sin_port = htons((uint16_t)port);
    addr_format(&addr, text, sizeof text);
    server_ready(text, read_counters);

    /* serve until SHUTDOWN (or end of stdin) */
    (void)control_wait(NULL);
    grpc_completion_queue *scq = grpc_completion_queue_create_for_pluck(NULL);
    int tag;
    grpc_server_shutdown_and_notify(server, scq, &tag);
    grpc_server_cancel_all_calls(server);
    grpc_completion_queue_pluck(scq, &tag, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_seconds(2, GPR_TIMESPAN)), NULL);
    server_stopped(read_counters);
}
