#include "args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const STACKS[] = {"grpc", "quic", "zmq"};
static const char *const SHAPES[] = {"unary", "client_stream", "server_stream", "bidi", "send"};
static const char *const LOADS[] = {"closed", "window", "backpressure", "send-saturation",
                                    "open"};
static const char *const PAYLOADS[] = {"zeros", "structured"};
static const char *const SERVER_FAULTS[] = {
    "none",           "wrong-seq",     "short-payload", "nonzero-byte",
    "wrong-summary",  "missing-message", "extra-message", "early-status",
    "error-status",   "corrupt-structured", "skip-validation"};
static const char *const CLIENT_FAULTS[] = {
    "none",       "nonzero-byte", "corrupt-structured", "seq-order", "length-change",
    "response-size-too-large", "response-messages-zero", "empty-stream"};

const char *stack_name(stack_kind s) { return STACKS[s]; }
const char *shape_name(shape_kind s) { return SHAPES[s]; }
const char *load_name(load_kind l) { return LOADS[l]; }
const char *payload_name(payload_kind p) { return PAYLOADS[p]; }
const char *server_fault_name(server_fault f) { return SERVER_FAULTS[f]; }
const char *client_fault_name(client_fault f) { return CLIENT_FAULTS[f]; }

uint32_t client_lanes(const client_args *a) {
    switch (a->load) {
    case LOAD_WINDOW: return a->in_flight;
    case LOAD_SEND_SATURATION: return a->streams;
    default: return a->concurrency;
    }
}

static int find(const char *const *names, size_t n, const char *text) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], text) == 0) return (int)i;
    return -1;
}

#define ERR(...)                                                                            \
    do {                                                                                    \
        snprintf(err, errlen, __VA_ARGS__);                                                 \
        return false;                                                                       \
    } while (0)

/* Unsigned decimal: digits only, no sign, at most max. */
static bool parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out) {
    if (!*text || strlen(text) > 20) return false;
    uint64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    if (v < min || v > max) return false;
    *out = v;
    return true;
}

static bool parse_rate(const char *text, double *out) {
    /* a decimal number: digits, optionally one '.' and more digits */
    size_t dots = 0, digits = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '.') dots++;
        else if (*p >= '0' && *p <= '9') digits++;
        else return false;
    }
    if (digits == 0 || dots > 1 || text[0] == '.' || text[strlen(text) - 1] == '.') return false;
    double v = strtod(text, NULL);
    if (!isfinite(v) || v <= 0.0 || v > MAX_RATE_ARG) return false;
    *out = v;
    return true;
}

bool split_host_port(const char *text, char *host, size_t hostlen, uint16_t *port) {
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text) return false;
    const char *h = text;
    size_t n = (size_t)(colon - text);
    if (h[0] == '[') {
        if (n < 3 || h[n - 1] != ']') return false;
        h++;
        n -= 2;
    }
    if (n == 0 || n >= hostlen) return false;
    memcpy(host, h, n);
    host[n] = 0;
    uint64_t p;
    if (!parse_u64(colon + 1, 0, 65535, &p)) return false;
    *port = (uint16_t)p;
    return true;
}

static bool valid_server_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 253) return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == ':' || c == '_';
        if (!ok) return false;
    }
    return true;
}

static bool copy_text(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n == 0 || n >= cap) return false;
    memcpy(dst, src, n + 1);
    return true;
}

/* Argument ids, one bit each in the "seen" mask. */
enum {
    A_STACK, A_LISTEN, A_CERT, A_KEY, A_SERVER, A_SERVER_NAME, A_CA, A_SHAPE, A_CONCURRENCY,
    A_REQUEST_SIZE, A_RESPONSE_SIZE, A_MESSAGES, A_LOAD, A_PAYLOAD, A_IN_FLIGHT,
    A_MAX_IN_FLIGHT, A_STREAMS, A_SETTLE_MS, A_RATE, A_ARRIVAL, A_SEED, A_WARMUP_MS,
    A_WINDOW_MS, A_DRAIN_MS, A_TLS, A_FAULT, A_CLIENT_MODE, A_COUNT
};

static const char *const ARG_NAMES[A_COUNT] = {
    "--stack", "--listen", "--cert", "--key", "--server", "--server-name", "--ca", "--shape",
    "--concurrency", "--request-size", "--response-size", "--messages-per-stream", "--load",
    "--payload", "--in-flight", "--max-in-flight", "--streams", "--settle-ms", "--rate",
    "--arrival", "--seed", "--warmup-ms", "--window-ms", "--drain-ms", "--tls",
    "--conformance-fault", "--client-mode",
};

static const int SERVER_ARGS[] = {A_STACK, A_LISTEN};
static const int CLIENT_REQUIRED[] = {A_STACK,        A_SERVER,        A_SHAPE,
                                      A_CONCURRENCY,  A_REQUEST_SIZE,  A_RESPONSE_SIZE,
                                      A_MESSAGES,     A_LOAD,          A_WARMUP_MS,
                                      A_WINDOW_MS,    A_DRAIN_MS};

static bool server_allows(int id) {
    return id == A_STACK || id == A_LISTEN || id == A_CERT || id == A_KEY || id == A_TLS ||
           id == A_FAULT;
}
static bool client_allows(int id) {
    return id == A_STACK || id == A_TLS || id == A_FAULT ||
           (id >= A_SERVER && id != A_LISTEN && id != A_CERT && id != A_KEY);
}

static bool set_tls(const char *v, bool *out, char *err, size_t errlen) {
    if (strcmp(v, "on") == 0) *out = true;
    else if (strcmp(v, "off") == 0) *out = false;
    else ERR("--tls %s: expected on or off", v);
    return true;
}

static bool set_fault(const char *const *names, size_t n, const char *v, int *out, char *err,
                      size_t errlen) {
    int k = find(names, n, v);
    if (k <= 0) ERR("--conformance-fault %s: not a conformance fault mode of this role", v);
    *out = k;
    return true;
}

/* Which --tls values a stack takes (docs/peer-protocol.md "Plaintext"), then the TLS files:
 * required with on, refused with off. `files` and `names` list the role's TLS arguments. */
static bool check_tls(stack_kind stack, bool tls, const bool *seen, const int *files,
                      size_t n, char *err, size_t errlen) {
    if (stack == STACK_QUIC && !tls)
        ERR("--tls off: QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic");
    if (stack == STACK_ZMQ && tls) ERR("--tls on: zmq has no TLS; run it with --tls off");
    for (size_t i = 0; i < n; i++) {
        if (tls && !seen[files[i]]) ERR("missing argument %s (needed with --tls on)", ARG_NAMES[files[i]]);
        if (!tls && seen[files[i]]) ERR("%s does not apply to --tls off", ARG_NAMES[files[i]]);
    }
    return true;
}

static bool set_server(server_args *s, int id, const char *v, char *err, size_t errlen) {
    uint16_t port;
    char host[ARG_TEXT];
    switch (id) {
    case A_STACK: {
        int k = find(STACKS, STACK_COUNT, v);
        if (k < 0) ERR("--stack %s: this peer serves grpc, quic and zmq", v);
        s->stack = (stack_kind)k;
        return true;
    }
    case A_LISTEN:
        if (!split_host_port(v, host, sizeof host, &port) || !copy_text(s->listen, sizeof s->listen, v))
            ERR("--listen %s: expected HOST:PORT (port 0 to 65535)", v);
        return true;
    case A_CERT:
        if (!copy_text(s->cert, sizeof s->cert, v)) ERR("--cert: expected a file path");
        return true;
    case A_KEY:
        if (!copy_text(s->key, sizeof s->key, v)) ERR("--key: expected a file path");
        return true;
    case A_TLS: return set_tls(v, &s->tls, err, errlen);
    case A_FAULT: {
        int k = 0;
        if (!set_fault(SERVER_FAULTS, SF_COUNT, v, &k, err, errlen)) {
            /* docs/stacks.md's zmq section calls skip-validation no-validation */
            if (strcmp(v, "no-validation") != 0) return false;
            k = SF_SKIP_VALIDATION;
        }
        s->fault = (server_fault)k;
        return true;
    }
    }
    ERR("%s does not apply to the server command", ARG_NAMES[id]);
}

static bool set_u32(const char *name, const char *v, uint64_t min, uint64_t max, uint32_t *out,
                    char *err, size_t errlen) {
    uint64_t x;
    if (!parse_u64(v, min, max, &x))
        ERR("%s %s: expected a whole number from %llu to %llu", name, v,
            (unsigned long long)min, (unsigned long long)max);
    *out = (uint32_t)x;
    return true;
}

static bool set_ms(const char *name, const char *v, uint64_t min, uint64_t *out, char *err,
                   size_t errlen) {
    if (!parse_u64(v, min, UINT32_MAX, out))
        ERR("%s %s: expected whole milliseconds from %llu to 4294967295", name, v,
            (unsigned long long)min);
    return true;
}

/* The load models' own arguments. */
static bool set_model_arg(client_args *c, int id, const char *v, char *err, size_t errlen) {
    switch (id) {
    case A_IN_FLIGHT:
        return set_u32("--in-flight", v, 1, MAX_IN_FLIGHT_ARG, &c->in_flight, err, errlen);
    case A_MAX_IN_FLIGHT:
        return set_u32("--max-in-flight", v, 1, MAX_CAP_ARG, &c->max_in_flight, err, errlen);
    case A_STREAMS:
        return set_u32("--streams", v, 1, MAX_STREAMS_ARG, &c->streams, err, errlen);
    case A_SETTLE_MS: return set_ms("--settle-ms", v, 0, &c->settle_ms, err, errlen);
    case A_RATE:
        if (!parse_rate(v, &c->rate))
            ERR("--rate %s: expected a decimal number above 0 and at most 10000000", v);
        snprintf(c->rate_text, sizeof c->rate_text, "%s", v);
        return true;
    case A_ARRIVAL:
        if (strcmp(v, "constant") == 0) c->arrival = ARRIVAL_CONSTANT;
        else if (strcmp(v, "poisson") == 0) c->arrival = ARRIVAL_POISSON;
        else ERR("--arrival %s: expected constant or poisson", v);
        return true;
    case A_SEED:
        if (!parse_u64(v, 0, UINT64_MAX, &c->seed))
            ERR("--seed %s: expected a whole number from 0 to 18446744073709551615", v);
        return true;
    }
    ERR("%s does not apply to the client command", ARG_NAMES[id]);
}

/* --payload: zeros or structured. dated (1.4) is the oRPC benchmarks' JSON procedure, which
 * none of this peer's stacks carries (docs/peer-protocol.md "Payload kinds"). */
static bool set_payload(client_args *c, const char *v, char *err, size_t errlen) {
    int k = find(PAYLOADS, 2, v);
    if (k >= 0) {
        c->payload = (payload_kind)k;
        return true;
    }
    if (strcmp(v, "dated") == 0)
        ERR("--payload dated: no stack of this peer carries it (dated, 1.4, is the JSON stacks' "
            "procedure nested.procedure_1; grpc, quic and zmq carry bench.proto messages and "
            "list zeros and structured only); use --payload zeros or structured");
    ERR("--payload %s: expected zeros or structured", v);
}

/* --client-mode (1.4): official only, the default. Every client here calls through its
 * library's own API (gRPC core, ngtcp2, libzmq), so there is no official client to capture
 * and replay; capabilities lists no client_modes, which means official only. */
static bool check_client_mode(const char *v, char *err, size_t errlen) {
    if (strcmp(v, "official") == 0) return true;
    if (strcmp(v, "replay") == 0)
        ERR("--client-mode replay: no stack of this peer takes it (replay, 1.4, resends the "
            "request a JSON library's official client captured; the grpc, quic and zmq clients "
            "here call their libraries directly); use --client-mode official, the default");
    ERR("--client-mode %s: not a client mode; expected official (the default, and the only mode "
        "this peer's clients take) or replay (1.4, which no stack of this peer takes)", v);
}

static bool set_client(client_args *c, int id, const char *v, char *err, size_t errlen) {
    uint16_t port;
    char host[ARG_TEXT];
    int k;
    switch (id) {
    case A_STACK:
        if ((k = find(STACKS, STACK_COUNT, v)) < 0)
            ERR("--stack %s: this peer drives grpc, quic and zmq", v);
        c->stack = (stack_kind)k;
        return true;
    case A_TLS: return set_tls(v, &c->tls, err, errlen);
    case A_FAULT:
        if (!set_fault(CLIENT_FAULTS, CF_COUNT, v, &k, err, errlen)) return false;
        c->fault = (client_fault)k;
        return true;
    case A_SERVER:
        if (!split_host_port(v, host, sizeof host, &port) || port == 0 ||
            !copy_text(c->server, sizeof c->server, v))
            ERR("--server %s: expected HOST:PORT with a port from 1 to 65535", v);
        return true;
    case A_SERVER_NAME:
        if (!valid_server_name(v) || !copy_text(c->server_name, sizeof c->server_name, v))
            ERR("--server-name %s: neither a DNS name nor an IP address", v);
        return true;
    case A_CA:
        if (!copy_text(c->ca, sizeof c->ca, v)) ERR("--ca: expected a file path");
        return true;
    case A_SHAPE:
        if (strcmp(v, "pingpong") == 0)
            ERR("--shape pingpong: this client does not drive pingpong (its servers serve it); "
                "expected unary, client_stream, server_stream, bidi or send");
        if ((k = find(SHAPES, SHAPE_COUNT, v)) < 0)
            ERR("--shape %s: expected unary, client_stream, server_stream, bidi or send", v);
        c->shape = (shape_kind)k;
        return true;
    case A_CONCURRENCY:
        return set_u32("--concurrency", v, 1, MAX_CONCURRENCY, &c->concurrency, err, errlen);
    case A_REQUEST_SIZE:
        return set_u32("--request-size", v, 0, MAX_PAYLOAD, &c->request_size, err, errlen);
    case A_RESPONSE_SIZE:
        return set_u32("--response-size", v, 0, MAX_PAYLOAD, &c->response_size, err, errlen);
    case A_MESSAGES:
        return set_u32("--messages-per-stream", v, 1, MAX_MESSAGES, &c->messages, err, errlen);
    case A_LOAD:
        if ((k = find(LOADS, 5, v)) < 0)
            ERR("--load %s: expected closed, window, backpressure, send-saturation or open", v);
        c->load = (load_kind)k;
        return true;
    case A_PAYLOAD: return set_payload(c, v, err, errlen);
    case A_CLIENT_MODE: return check_client_mode(v, err, errlen);
    case A_WARMUP_MS: return set_ms("--warmup-ms", v, 0, &c->warmup_ms, err, errlen);
    case A_WINDOW_MS: return set_ms("--window-ms", v, 1, &c->window_ms, err, errlen);
    case A_DRAIN_MS: return set_ms("--drain-ms", v, 0, &c->drain_ms, err, errlen);
    }
    return set_model_arg(c, id, v, err, errlen);
}

/* The shapes each stack carries: quic every stream shape but no one-way message, zmq unary and
 * send (docs/stacks.md "zmq"), grpc all five. */
static bool check_stack_shape(const client_args *c, char *err, size_t errlen) {
    if (c->stack == STACK_QUIC && c->shape == SHAPE_SEND)
        ERR("--shape send: --stack quic has no one-way message (the native framing answers every "
            "request); use --stack grpc or zmq");
    if (c->stack == STACK_ZMQ && c->shape != SHAPE_UNARY && c->shape != SHAPE_SEND)
        ERR("--shape %s: --stack zmq carries unary and send only (no streams)", SHAPES[c->shape]);
    if (c->load == LOAD_SEND_SATURATION && c->shape != SHAPE_CLIENT_STREAM && c->shape != SHAPE_SEND)
        ERR("--load send-saturation runs client streams or one-way commands only, not --shape %s",
            SHAPES[c->shape]);
    return true;
}

/* A client conformance fault: on zmq only, and only where the mode applies. */
static bool check_client_fault(const client_args *c, char *err, size_t errlen) {
    if (c->fault == CF_NONE) return true;
    if (c->stack != STACK_ZMQ)
        ERR("--conformance-fault: this peer implements the conformance faults on --stack zmq only");
    switch (c->fault) {
    case CF_SEQ_ORDER:
    case CF_LENGTH_CHANGE:
    case CF_EMPTY_STREAM:
        ERR("--conformance-fault %s applies to --shape client_stream, bidi or pingpong, not %s",
            CLIENT_FAULTS[c->fault], SHAPES[c->shape]);
    case CF_RESPONSE_MESSAGES_ZERO:
        ERR("--conformance-fault %s applies to --shape server_stream, not %s",
            CLIENT_FAULTS[c->fault], SHAPES[c->shape]);
    case CF_CORRUPT_STRUCTURED:
        if (c->payload != PAYLOAD_STRUCTURED)
            ERR("--conformance-fault corrupt-structured needs --payload structured");
        return true;
    default: return true;
    }
}

static bool check_client(const client_args *c, const bool *seen, char *err, size_t errlen) {
    for (size_t i = 0; i < sizeof CLIENT_REQUIRED / sizeof CLIENT_REQUIRED[0]; i++)
        if (!seen[CLIENT_REQUIRED[i]]) ERR("missing argument %s", ARG_NAMES[CLIENT_REQUIRED[i]]);
    static const int files[] = {A_SERVER_NAME, A_CA};
    if (!check_tls(c->stack, c->tls, seen, files, 2, err, errlen)) return false;
    if (c->payload == PAYLOAD_STRUCTURED) {
        if (c->request_size == 1 || c->request_size == 2)
            ERR("--request-size %u with --payload structured: a structured payload is 0 or at "
                "least 3 bytes", c->request_size);
        if (c->response_size == 1 || c->response_size == 2)
            ERR("--response-size %u with --payload structured: a structured payload is 0 or at "
                "least 3 bytes", c->response_size);
    }
    /* (argument, the model that owns it, required by it) */
    static const struct {
        int id;
        load_kind owner;
        bool required;
    } specific[] = {
        {A_IN_FLIGHT, LOAD_WINDOW, true},         {A_MAX_IN_FLIGHT, LOAD_BACKPRESSURE, true},
        {A_STREAMS, LOAD_SEND_SATURATION, true},  {A_SETTLE_MS, LOAD_SEND_SATURATION, true},
        {A_RATE, LOAD_OPEN, true},                {A_ARRIVAL, LOAD_OPEN, false},
        {A_SEED, LOAD_OPEN, false},
    };
    for (size_t i = 0; i < sizeof specific / sizeof specific[0]; i++) {
        bool given = seen[specific[i].id];
        if (given && specific[i].owner != c->load)
            ERR("%s does not apply to --load %s", ARG_NAMES[specific[i].id], LOADS[c->load]);
        if (!given && specific[i].required && specific[i].owner == c->load)
            ERR("--load %s needs %s", LOADS[c->load], ARG_NAMES[specific[i].id]);
    }
    return check_stack_shape(c, err, errlen) && check_client_fault(c, err, errlen);
}

static bool check_server(const server_args *s, const bool *seen, char *err, size_t errlen) {
    for (size_t i = 0; i < sizeof SERVER_ARGS / sizeof SERVER_ARGS[0]; i++)
        if (!seen[SERVER_ARGS[i]]) ERR("missing argument %s", ARG_NAMES[SERVER_ARGS[i]]);
    static const int files[] = {A_CERT, A_KEY};
    if (!check_tls(s->stack, s->tls, seen, files, 2, err, errlen)) return false;
    if (s->fault != SF_NONE && s->stack != STACK_ZMQ)
        ERR("--conformance-fault: this peer implements the conformance faults on --stack zmq only");
    return true;
}

bool args_parse(int argc, char **argv, command_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->server.tls = out->client.tls = true;
    if (argc < 2) ERR("no command given; expected capabilities, server or client");
    const char *cmd = argv[1];
    if (strcmp(cmd, "capabilities") == 0) {
        if (argc > 2) ERR("capabilities takes no arguments, got %s", argv[2]);
        out->kind = CMD_CAPABILITIES;
        return true;
    }
    if (strcmp(cmd, "server") == 0) out->kind = CMD_SERVER;
    else if (strcmp(cmd, "client") == 0) out->kind = CMD_CLIENT;
    else ERR("unknown command %s; expected capabilities, server or client", cmd);

    bool seen[A_COUNT] = {false};
    for (int i = 2; i < argc; i += 2) {
        const char *name = argv[i];
        int id = -1;
        for (int k = 0; k < A_COUNT; k++)
            if (strcmp(ARG_NAMES[k], name) == 0) id = k;
        bool allowed = id >= 0 && (out->kind == CMD_CLIENT ? client_allows(id) : server_allows(id));
        if (!allowed) ERR("unknown argument %s for the %s command", name, cmd);
        if (i + 1 >= argc) ERR("%s needs a value", name);
        if (seen[id]) ERR("%s given more than once", name);
        seen[id] = true;
        const char *value = argv[i + 1];
        bool ok = out->kind == CMD_CLIENT ? set_client(&out->client, id, value, err, errlen)
                                          : set_server(&out->server, id, value, err, errlen);
        if (!ok) return false;
    }
    if (out->kind == CMD_SERVER) return check_server(&out->server, seen, err, errlen);
    return check_client(&out->client, seen, err, errlen);
}
