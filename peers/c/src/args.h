/* Command-line arguments exactly as docs/peer-protocol.md "Commands" lists them. Parsing is a
 * pure function: it fills a command or writes one sentence that names the argument at fault. */
#ifndef RPCARENA_ARGS_H
#define RPCARENA_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { STACK_GRPC = 0, STACK_QUIC = 1, STACK_ZMQ = 2 } stack_kind;
#define STACK_COUNT 3
/* SHAPE_SEND (1.3): a one-way command (gRPC's Command RPC, zmq's command endpoint). */
typedef enum {
    SHAPE_UNARY = 0,
    SHAPE_CLIENT_STREAM,
    SHAPE_SERVER_STREAM,
    SHAPE_BIDI,
    SHAPE_SEND
} shape_kind;
#define SHAPE_COUNT 5
typedef enum {
    LOAD_CLOSED = 0,
    LOAD_WINDOW,
    LOAD_BACKPRESSURE,
    LOAD_SEND_SATURATION,
    LOAD_OPEN
} load_kind;
typedef enum { PAYLOAD_ZEROS = 0, PAYLOAD_STRUCTURED = 1 } payload_kind;
typedef enum { ARRIVAL_CONSTANT = 0, ARRIVAL_POISSON = 1 } arrival_kind;

/* Conformance faults (docs/stacks.md "Conformance faults", crates/peer/src/fault.rs), names as
 * the Rust peer spells them; this peer implements them on --stack zmq only. */
typedef enum {
    SF_NONE = 0,
    SF_WRONG_SEQ,
    SF_SHORT_PAYLOAD,
    SF_NONZERO_BYTE,
    SF_WRONG_SUMMARY,
    SF_MISSING_MESSAGE,
    SF_EXTRA_MESSAGE,
    SF_EARLY_STATUS,
    SF_ERROR_STATUS,
    SF_CORRUPT_STRUCTURED,
    SF_SKIP_VALIDATION,
    SF_COUNT
} server_fault;
typedef enum {
    CF_NONE = 0,
    CF_NONZERO_BYTE,
    CF_CORRUPT_STRUCTURED,
    CF_SEQ_ORDER,
    CF_LENGTH_CHANGE,
    CF_RESPONSE_SIZE_TOO_LARGE,
    CF_RESPONSE_MESSAGES_ZERO,
    CF_EMPTY_STREAM,
    CF_COUNT
} client_fault;

#define ARG_TEXT 512

typedef struct {
    stack_kind stack;
    bool tls; /* --tls on (the default) or off (1.3) */
    server_fault fault;
    char listen[ARG_TEXT];
    char cert[ARG_TEXT * 8];
    char key[ARG_TEXT * 8];
} server_args;

typedef struct {
    stack_kind stack;
    bool tls; /* --tls on (the default) or off (1.3) */
    client_fault fault;
    char server[ARG_TEXT];
    char server_name[ARG_TEXT];
    char ca[ARG_TEXT * 8];
    shape_kind shape;
    uint32_t concurrency;
    uint32_t request_size, response_size;
    uint32_t messages;
    load_kind load;
    payload_kind payload;
    uint32_t in_flight;     /* window */
    uint32_t max_in_flight; /* backpressure */
    uint32_t streams;       /* send-saturation */
    uint64_t settle_ms;     /* send-saturation */
    double rate;            /* open */
    char rate_text[64];
    arrival_kind arrival; /* open */
    uint64_t seed;        /* open */
    uint64_t warmup_ms, window_ms, drain_ms;
} client_args;

typedef enum { CMD_CAPABILITIES = 0, CMD_SERVER, CMD_CLIENT } cmd_kind;

typedef struct {
    cmd_kind kind;
    server_args server;
    client_args client;
} command_t;

/* Limits this peer states (docs/peer-protocol.md allows a lower --streams limit). */
#define MAX_IN_FLIGHT_ARG 100000u
#define MAX_CAP_ARG 1000000u
#define MAX_STREAMS_ARG 1000u
#define MAX_RATE_ARG 10000000.0

/* Returns true and fills *out, or false with a message in err. argv[0] is the program. */
bool args_parse(int argc, char **argv, command_t *out, char *err, size_t errlen);

const char *stack_name(stack_kind s);
const char *shape_name(shape_kind s);
const char *load_name(load_kind l);
const char *payload_name(payload_kind p);
const char *server_fault_name(server_fault f);
const char *client_fault_name(client_fault f);

/* Lanes of a model (armed.lanes): --in-flight for window, --streams for send-saturation,
 * --concurrency for the others. */
uint32_t client_lanes(const client_args *a);

/* Splits "host:port" / "[v6]:port" into host (brackets removed) and port. */
bool split_host_port(const char *text, char *host, size_t hostlen, uint16_t *port);

#endif
