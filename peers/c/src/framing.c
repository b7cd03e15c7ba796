#include "framing.h"

#include <stdio.h>
#include <string.h>

#include "workload.h"

frame_result frame_parse(const uint8_t *data, size_t len, frame_t *f, size_t *consumed, char *why,
                         size_t whylen) {
    if (len < 1) return FR_MORE;
    uint8_t type = data[0];
    if (type < FT_HEADER || type > FT_STATUS) {
        snprintf(why, whylen, "unknown frame type 0x%02x", type);
        return FR_ERROR;
    }
    if (len < FRAME_PREFIX) return FR_MORE;
    uint32_t body = ((uint32_t)data[1] << 24) | ((uint32_t)data[2] << 16) |
                    ((uint32_t)data[3] << 8) | (uint32_t)data[4];
    if (body > MAX_FRAME_BODY) {
        snprintf(why, whylen, "a %s frame of %u bytes is above the limit of %u", frame_name(type),
                 body, MAX_FRAME_BODY);
        return FR_ERROR;
    }
    if (type == FT_END && body != 0) {
        snprintf(why, whylen, "an END frame carries %u bytes; it must be empty", body);
        return FR_ERROR;
    }
    if (len - FRAME_PREFIX < body) return FR_MORE;
    f->type = type;
    f->len = body;
    f->body = data + FRAME_PREFIX;
    *consumed = FRAME_PREFIX + (size_t)body;
    return FR_FRAME;
}

const char *frame_name(uint8_t type) {
    switch (type) {
    case FT_HEADER: return "HEADER";
    case FT_MESSAGE: return "MESSAGE";
    case FT_END: return "END";
    case FT_STATUS: return "STATUS";
    default: return "unknown";
    }
}

void frame_prefix(uint8_t out[FRAME_PREFIX], uint8_t type, uint32_t len) {
    out[0] = type;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}

bool frame_append(buf_t *b, uint8_t type, const uint8_t *body, uint32_t len) {
    uint8_t p[FRAME_PREFIX];
    frame_prefix(p, type, len);
    if (!buf_reserve(b, FRAME_PREFIX + (size_t)len)) return false;
    buf_append(b, p, FRAME_PREFIX);
    if (len) buf_append(b, body, len);
    return true;
}

bool frame_append_status(buf_t *b, uint32_t code, const char *message) {
    pb_status s = RPCARENA__BENCH__V1__STATUS__INIT;
    s.code = code;
    s.message = (char *)(message ? message : "");
    size_t n = rpcarena__bench__v1__status__get_packed_size(&s);
    if (!buf_reserve(b, FRAME_PREFIX + n)) return false;
    uint8_t p[FRAME_PREFIX];
    frame_prefix(p, FT_STATUS, (uint32_t)n);
    buf_append(b, p, FRAME_PREFIX);
    rpcarena__bench__v1__status__pack(&s, b->data + b->len);
    b->len += n;
    return true;
}

bool status_decode(const uint8_t *body, size_t len, uint32_t *code, char *msg, size_t msglen) {
    pb_status *s = rpcarena__bench__v1__status__unpack(NULL, len, body);
    if (!s) return false;
    *code = s->code;
    snprintf(msg, msglen, "%s", s->message ? s->message : "");
    rpcarena__bench__v1__status__free_unpacked(s, NULL);
    return true;
}
