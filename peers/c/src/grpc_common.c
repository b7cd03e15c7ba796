#include "grpc_common.h"

#include <grpc/grpc_security.h>
#include <grpc/impl/codegen/grpc_types.h>
#include <grpc/support/sync.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "netutil.h"
#include "transport.h"
#include "util.h"

/* gRPC core declares `grpc_socket_mutator` in its public header (grpc_types.h, with the
 * GRPC_ARG_SOCKET_MUTATOR channel argument) but defines its layout in an internal header that
 * libgrpc-dev does not ship (src/core/lib/iomgr/socket_mutator.h). This is that layout, stable
 * since gRPC 1.38 and checked against 1.51.1: a vtable pointer and a refcount, and the vtable's
 * four functions. With mutate_fd_2 set, gRPC calls it for client connections, the listener and
 * every accepted server connection. */
typedef enum {
    FD_CLIENT_CONNECTION_USAGE,
    FD_SERVER_LISTENER_USAGE,
    FD_SERVER_CONNECTION_USAGE,
} fd_usage;
typedef struct {
    int fd;
    fd_usage usage;
} mutate_socket_info;
typedef struct {
    bool (*mutate_fd)(int fd, grpc_socket_mutator *mutator);
    int (*compare)(grpc_socket_mutator *a, grpc_socket_mutator *b);
    void (*destroy)(grpc_socket_mutator *mutator);
    bool (*mutate_fd_2)(const mutate_socket_info *info, grpc_socket_mutator *mutator);
} socket_mutator_vtable;
struct grpc_socket_mutator {
    const socket_mutator_vtable *vtable;
    gpr_refcount refcount;
};

static unsigned mutated;

static bool mutate_fd(int fd, grpc_socket_mutator *m) {
    (void)m;
    tune_tcp_socket(fd);
    __atomic_add_fetch(&mutated, 1, __ATOMIC_RELAXED);
    return true; /* a refused congestion controller is reported, not fatal */
}
static bool mutate_fd_2(const mutate_socket_info *info, grpc_socket_mutator *m) {
    /* a client's connections are the ones its transport statistics read */
    if (info->usage == FD_CLIENT_CONNECTION_USAGE) tcp_sockets_register(info->fd);
    return mutate_fd(info->fd, m);
}
static int mutator_compare(grpc_socket_mutator *a, grpc_socket_mutator *b) {
    return a == b ? 0 : (a < b ? -1 : 1);
}
static void mutator_destroy(grpc_socket_mutator *m) { (void)m; /* static */ }

static const socket_mutator_vtable MUTATOR_VTABLE = {mutate_fd, mutator_compare, mutator_destroy,
                                                     mutate_fd_2};
static grpc_socket_mutator the_mutator = {&MUTATOR_VTABLE, {1}};

/* The channel argument's own vtable: the mutator lives as long as the process. */
static void *arg_copy(void *p) { return p; }
static void arg_destroy(void *p) { (void)p; }
static int arg_cmp(void *a, void *b) { return a == b ? 0 : (a < b ? -1 : 1); }
static const grpc_arg_pointer_vtable ARG_VTABLE = {arg_copy, arg_destroy, arg_cmp};

unsigned grpc_mutated_sockets(void) { return __atomic_load_n(&mutated, __ATOMIC_RELAXED); }

static grpc_arg int_arg(const char *key, int value) {
    grpc_arg a;
    a.type = GRPC_ARG_INTEGER;
    a.key = (char *)key;
    a.value.integer = value;
    return a;
}

const grpc_channel_args *grpc_peer_channel_args(bool client, const char *server_name) {
    static grpc_arg args[16];
    static grpc_channel_args out;
    size_t n = 0;
    args[n++] = int_arg(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    /* the initial stream window (SETTINGS_INITIAL_WINDOW_SIZE) and flow control's target */
    args[n++] = int_arg(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, (int)FLOW_WINDOW);
    args[n++] = int_arg(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16384);
    args[n++] = int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, (int)MAX_MESSAGE);
    args[n++] = int_arg(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, (int)MAX_MESSAGE);
    grpc_arg m;
    m.type = GRPC_ARG_POINTER;
    m.key = (char *)GRPC_ARG_SOCKET_MUTATOR;
    m.value.pointer.p = &the_mutator;
    m.value.pointer.vtable = &ARG_VTABLE;
    args[n++] = m;
    if (client) {
        if (server_name) {
            grpc_arg s;
            s.type = GRPC_ARG_STRING;
            s.key = (char *)GRPC_SSL_TARGET_NAME_OVERRIDE_ARG;
            s.value.string = (char *)server_name;
            args[n++] = s;
        }
        args[n++] = int_arg(GRPC_ARG_ENABLE_RETRIES, 0);
        args[n++] = int_arg(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    } else {
        args[n++] = int_arg(GRPC_ARG_MAX_CONCURRENT_STREAMS, (int)MAX_CONCURRENT_STREAMS);
        args[n++] = int_arg(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10000);
    }
    out.num_args = n;
    out.args = args;
    return &out;
}

const char *grpc_status_name(grpc_status_code code) {
    static const char *const names[] = {
        "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
        "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
        "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
        "UNAUTHENTICATED"};
    return (unsigned)code < sizeof names / sizeof names[0] ? names[code] : "UNKNOWN_CODE";
}

void slice_text(grpc_slice s, char *out, size_t outlen) {
    size_t n = GRPC_SLICE_LENGTH(s);
    if (n >= outlen) n = outlen - 1;
    memcpy(out, GRPC_SLICE_START_PTR(s), n);
    out[n] = 0;
}

unsigned worker_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return (unsigned)n;
    }
    return 1;
}
