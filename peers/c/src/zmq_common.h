/* What both zmq roles share on libzmq's C API: the socket options of docs/stacks.md "zmq"
 * (ROUTER_MANDATORY, HWMs 1000, linger 0), endpoints, and receiving a multipart message. */
#ifndef RPCARENA_ZMQ_COMMON_H
#define RPCARENA_ZMQ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <zmq.h>

#include "zmq_frames.h"

/* Frames kept of one message (routing id included); more are counted and discarded. */
#define ZMQ_MAX_FRAMES 8

/* A ROUTER socket with the stack's options; routing_id NULL: libzmq generates one. */
void *zmq_router(void *ctx, bool ipv6, const char *routing_id, char *err, size_t errlen);

/* "tcp://HOST:PORT" for an address "HOST:PORT" or "[v6]:PORT" as addr_format writes it. */
void zmq_endpoint(const char *address, char *out, size_t outlen);

/* One received message, its frames (the routing id first on a ROUTER). */
typedef struct {
    zmq_msg_t msgs[ZMQ_MAX_FRAMES];
    size_t kept;  /* frames in msgs */
    size_t total; /* frames received */
} zmq_in;

/* Receives one whole message without waiting: false when none is queued (EAGAIN) or the socket
 * failed (errno says). */
bool zmq_in_recv(void *sock, zmq_in *in);
void zmq_in_close(zmq_in *in);
/* The frames after the routing id, as zframes (at most ZMQ_MAX_FRAMES - 1). */
size_t zmq_in_frames(zmq_in *in, zframe *out);

/* Sends a multipart message with ZMQ_DONTWAIT: 0, or the errno of the first frame that failed
 * (EAGAIN: the peer's queue is at its high-water mark; EHOSTUNREACH: no such peer). */
int zmq_send_frames(void *sock, const zframe *frames, size_t n);

/* "libzmq 4.3.4" from zmq_version. */
const char *zmq_version_text(void);

#endif
