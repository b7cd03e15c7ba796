/* The zmq stack's messages (docs/stacks.md "zmq"), the pure part: what a received multipart
 * message is, how a malformed one is described, the client's check of a reply. The frames are
 * those after the routing-id frame libzmq's ROUTER adds or strips. Pure: no libzmq. */
#ifndef RPCARENA_ZMQ_FRAMES_H
#define RPCARENA_ZMQ_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"
#include "workload.h"

#define ZMQ_ID_BYTES 8
#define ZMQ_HELLO "HELLO"
#define ZMQ_HELLO_LEN 5
#define ZMQ_REQUEST_ROUTING_ID "rpcarena-request"
#define ZMQ_COMMAND_ROUTING_ID "rpcarena-command"
#define ZMQ_HWM 1000

typedef struct {
    const uint8_t *data;
    size_t len;
} zframe;

typedef enum { ZIN_HELLO = 0, ZIN_MESSAGE, ZIN_MALFORMED } zin_kind;

/* What a server received on an endpoint: a hello, `[id][Request]` (id and body set), or
 * something else (why set; *id_ok says whether an 8-byte id could still be read, to answer). */
typedef struct {
    zin_kind kind;
    uint64_t id;
    bool id_ok;
    zframe body;
    char why[128];
} zinbound;

void zmq_parse_inbound(const zframe *frames, size_t n, zinbound *out);

/* "2 frames of 8 and 7 bytes: [00 00 00 00 00 00 00 01] [48 45 4c 4c 4f 21 21]": every frame's
 * size and its first 16 bytes in hex. */
void zmq_describe_frames(const zframe *frames, size_t n, char *out, size_t outlen);

void zmq_put_id(uint8_t out[ZMQ_ID_BYTES], uint64_t id);
uint64_t zmq_get_id(const uint8_t in[ZMQ_ID_BYTES]);

/* A reply on the request endpoint, `[id][Status][Response]`: false (code invalid, frames
 * described) unless it has 3 frames and an 8-byte id; *id is set when true. */
bool zmq_reply_id(const zframe *frames, size_t n, uint64_t *id, failure_t *f);

/* Checks the reply of the unary operation c: Status code 0 (else rpc, with its message) and a
 * Response that passes the client's checks (else invalid). */
bool zmq_check_reply(call_t *c, const zframe *frames, failure_t *f);

/* Packs Status{code, message} into out (an all-default Status is empty). */
bool zmq_pack_status(uint32_t code, const char *message, buf_t *out);

#endif
