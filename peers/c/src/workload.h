/* The workload contract (proto/rpcarena/bench/v1/bench.proto) on protobuf-c: structured
 * payloads by the generation rule, building requests and responses, and the validation duties
 * of both roles (docs/peer-protocol.md "Payload kinds", "Validation duties"). Pure: no I/O. */
#ifndef RPCARENA_WORKLOAD_H
#define RPCARENA_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "rpcarena/bench/v1/bench.pb-c.h"
#include "util.h"

typedef Rpcarena__Bench__V1__Request pb_request;
typedef Rpcarena__Bench__V1__Response pb_response;
typedef Rpcarena__Bench__V1__Summary pb_summary;
typedef Rpcarena__Bench__V1__Structured pb_structured;
typedef Rpcarena__Bench__V1__Item pb_item;
typedef Rpcarena__Bench__V1__Status pb_status;
typedef Rpcarena__Bench__V1__Structured__AttributesEntry pb_attr;

/* What every operation of a sample does. */
typedef struct {
    shape_kind shape;
    uint32_t request_size, response_size;
    uint32_t messages; /* N */
    payload_kind payload;
} workload_t;

/* The shape of Structured(seq, S) without building it. */
typedef struct {
    bool base;          /* created_unix_ms and attributes set */
    uint32_t items;     /* Item(0) .. Item(items-1) */
    uint32_t title_len; /* 0: no title */
} structured_plan;

/* false for S = 1 or 2 (no message of these fields encodes to 1 or 2 bytes). */
bool structured_plan_for(uint64_t seq, uint32_t size, structured_plan *plan);

/* Scratch memory for building Structured(seq, S) without an allocation per message; one per
 * lane or call (not shared between threads). */
typedef struct {
    pb_structured msg;
    pb_attr attr;
    pb_attr *attr_ptr;
    char seq_text[24];
    char *title;
    size_t title_cap;
    pb_item *items;
    pb_item **item_ptrs;
    char (*names)[24];
    char *(*tags)[2];
    size_t cap;
} structured_t;

void structured_init(structured_t *s);
void structured_free(structured_t *s);
/* Builds Structured(seq, S) into s->msg; NULL for S = 0 (no body) or on failure. */
pb_structured *structured_build(structured_t *s, uint64_t seq, uint32_t size, bool *ok);

/* Compares a received body with Structured(seq, size) field by field; a NULL body is the empty
 * message. Returns true when equal, else writes why. */
bool structured_check(const pb_structured *got, uint64_t seq, uint32_t size, char *why,
                      size_t whylen);

/* Encoded length of a body (0 for NULL): the "payload length" of a structured message. */
uint64_t body_len(const pb_structured *body);

/* Builders (fields point into `s` and the shared zero buffer: valid until the next build). */
bool build_request(structured_t *s, payload_kind kind, uint64_t seq, uint32_t size,
                   uint32_t response_size, uint32_t response_messages, pb_request *out);
bool build_response(structured_t *s, payload_kind kind, uint64_t seq, uint32_t size,
                    pb_response *out);

/* Requests and responses per operation of each shape. */
uint32_t requests_per_op(shape_kind shape, uint32_t n);
uint32_t responses_per_op(shape_kind shape, uint32_t n);

/* gRPC method paths, also the native HEADER body. */
const char *method_path(shape_kind shape);
int shape_of_path(const uint8_t *path, size_t len); /* -1 if unknown */

/* ---- client side of one operation ---- */
typedef struct {
    const workload_t *w;
    uint64_t seq; /* operation number (unary, server stream) */
    uint32_t n_req, n_resp;
    uint32_t sent, received;
    uint64_t response_bytes;
} call_t;

void call_init(call_t *c, const workload_t *w, uint64_t seq);
/* Builds the next request (index c->sent) into out; false on failure (out of memory). */
bool call_next_request(call_t *c, structured_t *s, pb_request *out);
/* Decodes and checks one response message (a Summary for client streams). */
bool call_on_message(call_t *c, const uint8_t *data, size_t len, failure_t *f);
/* The terminal status was OK: every response must have arrived. */
bool call_on_status_ok(call_t *c, failure_t *f);
/* Send-saturation: the summary must confirm `sent` messages. */
bool check_stream_summary(const workload_t *w, uint64_t sent, const uint8_t *data, size_t len,
                          uint64_t *response_bytes, failure_t *f);

/* ---- server side of one call ---- */
typedef struct {
    shape_kind shape;
    uint32_t received;
    payload_kind kind;
    uint64_t payload_len;
    uint32_t response_size;
    uint32_t response_messages;
    uint64_t payload_bytes, last_seq, first_seq;
} serve_t;

void serve_init(serve_t *v, shape_kind shape);
/* Checks one request (and its place in the stream); false with why on failure. On success,
 * *req holds the decoded request (caller frees with pb_request_free). */
bool serve_on_request(serve_t *v, const uint8_t *data, size_t len, pb_request **req, char *why,
                      size_t whylen);
/* At the end of the request stream: at least one request arrived. */
bool serve_on_end(const serve_t *v, char *why, size_t whylen);
/* The client-stream summary. */
bool build_summary(const serve_t *v, structured_t *s, pb_summary *out);
void pb_request_free(pb_request *r);

/* Packing helpers: size, then pack into a buffer of that size. */
size_t request_size_of(const pb_request *r);
size_t pack_request(const pb_request *r, uint8_t *out);
size_t response_size_of(const pb_response *r);
size_t pack_response(const pb_response *r, uint8_t *out);
size_t summary_size_of(const pb_summary *r);
size_t pack_summary(const pb_summary *r, uint8_t *out);

#endif
