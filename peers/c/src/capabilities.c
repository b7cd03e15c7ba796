#include "capabilities.h"

#include <stdio.h>
#include <string.h>

#include "args.h"
#include "json.h"
#include "peer_build.h"
#include "util.h"
#include "zmq_common.h"

const char *lib_version(const char *name) {
    static char value[128];
    const char *all = PEER_LIB_VERSIONS;
    size_t n = strlen(name);
    for (const char *p = all; *p;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > n && strncmp(p, name, n) == 0 && p[n] == '=') {
            size_t v = len - n - 1;
            if (v >= sizeof value) v = sizeof value - 1;
            memcpy(value, p + n + 1, v);
            value[v] = 0;
            return value;
        }
        p += len + (end ? 1 : 0);
    }
    return "unknown";
}

static void strings(json_t *j, const char *key, const char *const *items, size_t n) {
    json_open_arr(j, key);
    for (size_t i = 0; i < n; i++) json_str(j, NULL, items[i]);
    json_close_arr(j);
}

#define ARR(a) a, sizeof a / sizeof a[0]

static const char *const SHAPES[] = {"unary", "client_stream", "server_stream", "bidi"};
static const char *const GRPC_SHAPES[] = {"unary", "client_stream", "server_stream", "bidi", "send"};
/* Both servers answer each bidi request as soon as it is validated (grpc_server.c on_recv,
 * quic_server.c on_message), which is all pingpong asks of a server (docs/peer-protocol.md
 * "Shapes"); the clients do not drive it. */
static const char *const SERVER_SHAPES[] = {"unary", "client_stream", "server_stream", "bidi",
                                            "pingpong"};
static const char *const GRPC_SERVER_SHAPES[] = {"unary", "client_stream", "server_stream", "bidi",
                                                 "pingpong", "send"};
static const char *const ZMQ_SHAPES[] = {"unary", "send"};
static const char *const TLS_BOTH[] = {"on", "off"};
static const char *const TLS_ON[] = {"on"};
static const char *const TLS_OFF[] = {"off"};
static const char *const MODELS[] = {"closed", "window", "backpressure", "send-saturation", "open"};
/* Not dated (1.4, the JSON stacks' procedure), and no client_modes (1.4): absent means the
 * official client only, which is what every client here is (args.c refuses dated and replay). */
static const char *const PAYLOADS[] = {"zeros", "structured"};
static const char *const TLS13[] = {"1.3"};
static const char *const X25519[] = {"x25519"};
/* OpenSSL 3.0's TLS 1.3 suites in its default order (gRPC core leaves them alone). */
static const char *const OPENSSL_CIPHERS[] = {"TLS_AES_256_GCM_SHA384",
                                              "TLS_CHACHA20_POLY1305_SHA256",
                                              "TLS_AES_128_GCM_SHA256"};
static const char *const GNUTLS_CIPHERS[] = {"TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256",
                                             "TLS_CHACHA20_POLY1305_SHA256"};

static const char *const GRPC_DEVIATIONS[] = {
    "HTTP/2 connection window: 16777216 required; gRPC core 1.51 has no connection-window "
    "setting: it starts at HTTP/2's 65535 and raises it to its target (the 16 MiB initial stream "
    "window) by WINDOW_UPDATE when the first data arrives, i.e. during the validation operation, "
    "before any measured call",
};

static const char *const QUIC_DEVIATIONS[] = {
    "QUIC send window: 16777216 required; ngtcp2 0.12 has no send-window setting: a stream's "
    "frames wait in the peer until the receiver's flow-control credit (16 MiB) and the "
    "congestion window let ngtcp2 send them, so the sender is bounded by those alone",
    "runtime: one event loop per CPU required; an ngtcp2 connection is driven by one thread, so "
    "the peer runs one epoll event loop thread per process for its QUIC connection(s)",
};

static void libraries(json_t *j, int stack) {
    json_open_obj(j, "libraries");
    if (stack == STACK_GRPC) {
        json_str(j, "grpc-core (libgrpc29)", lib_version("libgrpc29"));
        json_str(j, "openssl (libssl3)", lib_version("libssl3"));
    } else if (stack == STACK_ZMQ) {
        json_str(j, "libzmq", zmq_version_text());
        json_str(j, "libzmq (libzmq5)", lib_version("libzmq5"));
    } else {
        json_str(j, "ngtcp2 (libngtcp2-9)", lib_version("libngtcp2-9"));
        json_str(j, "ngtcp2_crypto_gnutls", lib_version("libngtcp2-crypto-gnutls2"));
        json_str(j, "gnutls (libgnutls30)", lib_version("libgnutls30"));
    }
    json_str(j, "protobuf-c (libprotobuf-c1)", lib_version("libprotobuf-c1"));
    json_str(j, "HdrHistogram_c", lib_version("HdrHistogram_c"));
    json_close(j);
}

static void zmq_settings(json_t *j, int client) {
    json_int(j, "sndhwm", ZMQ_HWM);
    json_int(j, "rcvhwm", ZMQ_HWM);
    json_bool(j, "router_mandatory", true);
    json_int(j, "linger_ms", 0);
    json_int(j, "io_threads", 1);
    json_bool(j, "tcp_nodelay", true);
    json_str(j, "congestion_control", "host default");
    json_str(j, "max_message_bytes", "unlimited (ZMQ_MAXMSGSIZE -1, libzmq's default)");
    json_str(j, "connections", "2 (a request and a command ROUTER socket)");
    json_str(j, "compression", "none");
    json_str(j, "runtime", client ? "the load model on one thread (a zmq_poll loop; submit_cpu_ns is its CPU), "
                                    "libzmq's one I/O thread"
                                  : "one thread in a zmq_poll loop serving both endpoints, libzmq's one I/O thread");
}

static void settings(json_t *j, int stack, int client, unsigned cpus) {
    char runtime[160];
    json_open_obj(j, "settings");
    if (stack == STACK_ZMQ) {
        zmq_settings(j, client);
    } else if (stack == STACK_GRPC) {
        strings(j, "tls_versions", ARR(TLS13));
        strings(j, "tls_groups", ARR(X25519));
        strings(j, "tls_ciphers", ARR(OPENSSL_CIPHERS));
        json_bool(j, "tls_resumption", false);
        json_str(j, "alpn", "h2");
        json_int(j, "stream_window", FLOW_WINDOW);
        json_str(j, "connection_window", "65535 until the first data, then 16777216");
        json_bool(j, "bdp_probing", false);
        json_int(j, "max_concurrent_streams", MAX_CONCURRENT_STREAMS);
        json_int(j, "max_message_bytes", MAX_MESSAGE);
        json_bool(j, "tcp_nodelay", true);
        json_str(j, "congestion_control", "cubic");
        json_int(j, "connections", 1);
        json_str(j, "compression", "none");
        json_int(j, "max_frame_size", 16384);
        json_bool(j, "retries", false);
        json_str(j, "tls_settings_by",
                 "OpenSSL SSL_CTX_ctrl interposed by the peer (gRPC core 1.51's C API has no TLS "
                 "version or group setting and pins P-256): TLS 1.3 only, X25519 only, no tickets, "
                 "no session cache");
        json_str(j, "tcp_settings_by", "gRPC core socket mutator (GRPC_ARG_SOCKET_MUTATOR)");
        snprintf(runtime, sizeof runtime,
                 "%u worker threads (one per CPU), each polling its own gRPC completion queue", cpus);
        json_str(j, "runtime", runtime);
    } else {
        strings(j, "tls_versions", ARR(TLS13));
        strings(j, "tls_groups", ARR(X25519));
        strings(j, "tls_ciphers", ARR(GNUTLS_CIPHERS));
        json_bool(j, "tls_resumption", false);
        json_str(j, "alpn", "rpcarena/1");
        json_int(j, "stream_window", FLOW_WINDOW);
        json_int(j, "connection_window", FLOW_WINDOW);
        json_int(j, "max_concurrent_streams", MAX_CONCURRENT_STREAMS);
        json_int(j, "max_message_bytes", MAX_MESSAGE);
        json_str(j, "congestion_control", "cubic");
        json_int(j, "udp_buffer_bytes", 8 * 1024 * 1024);
        json_int(j, "idle_timeout_ms", 30000);
        json_int(j, "keep_alive_ms", 10000);
        json_int(j, "connections", 1);
        json_str(j, "compression", "none");
        json_str(j, "runtime", "one epoll + timerfd event loop thread (ngtcp2 is single-threaded per connection)");
    }
    json_close(j);
}

static void shapes(json_t *j, int stack, int client) {
    if (stack == STACK_ZMQ) strings(j, "shapes", ARR(ZMQ_SHAPES));
    else if (stack == STACK_GRPC && client) strings(j, "shapes", ARR(GRPC_SHAPES));
    else if (stack == STACK_GRPC) strings(j, "shapes", ARR(GRPC_SERVER_SHAPES));
    else if (client) strings(j, "shapes", ARR(SHAPES));
    else strings(j, "shapes", ARR(SERVER_SHAPES));
    if (client) strings(j, "load_models", ARR(MODELS));
    else strings(j, "load_models", NULL, 0);
}

/* The shapes a stack cannot carry, and why (1.3). */
static void not_offered(json_t *j, int stack) {
    if (stack == STACK_GRPC) return;
    json_open_obj(j, "not_offered");
    if (stack == STACK_QUIC) {
        json_str(j, "send", "the native framing answers every request with a STATUS frame; a one-way "
                            "command would need a frame type it does not have");
    } else {
        static const char *const streams[] = {"client_stream", "server_stream", "bidi", "pingpong"};
        for (size_t i = 0; i < 4; i++)
            json_str(j, streams[i], "the zmq mapping (docs/stacks.md) has a request with one reply and a "
                                    "one-way command, no streams");
    }
    json_close(j);
}

static void stack_entry(json_t *j, int stack, int client, unsigned cpus) {
    static const char *const names[] = {"grpc", "quic", "zmq"};
    json_open_obj(j, NULL);
    json_str(j, "stack", names[stack]);
    shapes(j, stack, client);
    strings(j, "payloads", ARR(PAYLOADS));
    if (stack == STACK_GRPC) strings(j, "tls", ARR(TLS_BOTH));
    else if (stack == STACK_QUIC) strings(j, "tls", ARR(TLS_ON));
    else strings(j, "tls", ARR(TLS_OFF));
    not_offered(j, stack);
    if (stack == STACK_ZMQ) json_bool(j, "conformance_faults", true);
    libraries(j, stack);
    settings(j, stack, client, cpus);
    if (stack == STACK_GRPC) strings(j, "deviations", ARR(GRPC_DEVIATIONS));
    else if (stack == STACK_QUIC) strings(j, "deviations", ARR(QUIC_DEVIATIONS));
    else strings(j, "deviations", NULL, 0);
    json_close(j);
}

char *capabilities_event(const char *exe, unsigned cpus) {
    json_t j;
    json_init(&j);
    json_open(&j);
    json_int(&j, "protocol", 1);
    json_str(&j, "event", "capabilities");
    json_str(&j, "peer", "rpcarena-peer-c");
    json_str(&j, "language", "c");
    json_str(&j, "version", PEER_VERSION);
    json_str(&j, "revision", "1.5");
    /* 1.5: native code, profiled from outside by `rpcarena profile` with Linux perf */
    json_str(&j, "profiler", "perf");
    json_open_obj(&j, "build");
    json_str(&j, "toolchain", PEER_COMPILER);
    json_str(&j, "flags", PEER_BUILD_FLAGS);
    json_str(&j, "standard", "C11 (gnu11)");
    json_str(&j, "build_type", PEER_BUILD_TYPE);
    json_str(&j, "build_system", "CMake");
    json_close(&j);
    json_open_arr(&j, "files");
    json_str(&j, NULL, exe);
    json_close_arr(&j);
    json_open_obj(&j, "roles");
    for (int role = 1; role >= 0; role--) {
        json_open_arr(&j, role ? "client" : "server");
        for (int stack = 0; stack < STACK_COUNT; stack++) stack_entry(&j, stack, role, cpus);
        json_close_arr(&j);
    }
    json_close(&j);
    json_close(&j);
    return j.oom ? NULL : j.data;
}
