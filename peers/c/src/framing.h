/* The native framing of the quic stack (docs/stacks.md "Native framing"): a frame is a 1-byte
 * type, a 4-byte big-endian length and the body. Pure parsing and encoding, no I/O. */
#ifndef RPCARENA_FRAMING_H
#define RPCARENA_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum { FT_HEADER = 0x01, FT_MESSAGE = 0x02, FT_END = 0x03, FT_STATUS = 0x04 };
#define FRAME_PREFIX 5
#define MAX_FRAME_BODY MAX_MESSAGE /* 16 MiB + 1 KiB */

typedef enum { FR_MORE = 0, FR_FRAME, FR_ERROR } frame_result;

typedef struct {
    uint8_t type;
    uint32_t len;
    const uint8_t *body;
} frame_t;

/* Looks at the start of data: a whole frame (consumed = prefix + body), more bytes needed, or a
 * malformed frame (unknown type, oversized body) with why. */
frame_result frame_parse(const uint8_t *data, size_t len, frame_t *f, size_t *consumed, char *why,
                         size_t whylen);
const char *frame_name(uint8_t type);
void frame_prefix(uint8_t out[FRAME_PREFIX], uint8_t type, uint32_t len);
/* Appends a whole frame. */
bool frame_append(buf_t *b, uint8_t type, const uint8_t *body, uint32_t len);
/* STATUS: encodes rpcarena.bench.v1.Status{code, message} as a frame. */
bool frame_append_status(buf_t *b, uint32_t code, const char *message);
/* Decodes a STATUS body: false if undecodable. message is copied (truncated) into msg. */
bool status_decode(const uint8_t *body, size_t len, uint32_t *code, char *msg, size_t msglen);

#endif
