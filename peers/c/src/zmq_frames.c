#include "zmq_frames.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void zmq_put_id(uint8_t out[ZMQ_ID_BYTES], uint64_t id) {
    for (int i = ZMQ_ID_BYTES - 1; i >= 0; i--, id >>= 8) out[i] = (uint8_t)id;
}

uint64_t zmq_get_id(const uint8_t in[ZMQ_ID_BYTES]) {
    uint64_t id = 0;
    for (int i = 0; i < ZMQ_ID_BYTES; i++) id = id << 8 | in[i];
    return id;
}

void zmq_parse_inbound(const zframe *frames, size_t n, zinbound *out) {
    memset(out, 0, sizeof *out);
    if (n == 1 && frames[0].len == ZMQ_HELLO_LEN && memcmp(frames[0].data, ZMQ_HELLO, ZMQ_HELLO_LEN) == 0) {
        out->kind = ZIN_HELLO;
        return;
    }
    out->kind = ZIN_MALFORMED;
    if (n >= 1 && frames[0].len == ZMQ_ID_BYTES) {
        out->id_ok = true;
        out->id = zmq_get_id(frames[0].data);
    }
    if (n != 2) {
        snprintf(out->why, sizeof out->why, "a message of %zu frame%s, expected 2 ([id][Request])", n,
                 n == 1 ? "" : "s");
        return;
    }
    if (!out->id_ok) {
        snprintf(out->why, sizeof out->why, "an id frame of %zu bytes, expected %d", frames[0].len,
                 ZMQ_ID_BYTES);
        return;
    }
    out->kind = ZIN_MESSAGE;
    out->body = frames[1];
}

void zmq_describe_frames(const zframe *frames, size_t n, char *out, size_t outlen) {
    size_t used = 0;
#define PUT(...)                                                                            \
    do {                                                                                    \
        int w = snprintf(out + used, used < outlen ? outlen - used : 0, __VA_ARGS__);       \
        if (w > 0) used += (size_t)w;                                                       \
    } while (0)
    PUT("%zu frame%s of ", n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) PUT("%s%zu", i == 0 ? "" : (i + 1 == n ? " and " : ", "), frames[i].len);
    PUT(" bytes:");
    for (size_t i = 0; i < n; i++) {
        PUT(" [");
        size_t show = frames[i].len < 16 ? frames[i].len : 16;
        for (size_t k = 0; k < show; k++) PUT("%s%02x", k ? " " : "", frames[i].data[k]);
        if (frames[i].len > show) PUT(" ...");
        PUT("]");
    }
#undef PUT
    if (n == 0) snprintf(out, outlen, "an empty message (no frames)");
    else if (used >= outlen && outlen > 4) memcpy(out + outlen - 4, "...", 4);
}

bool zmq_reply_id(const zframe *frames, size_t n, uint64_t *id, failure_t *f) {
    char text[400];
    if (n == 3 && frames[0].len == ZMQ_ID_BYTES) {
        *id = zmq_get_id(frames[0].data);
        return true;
    }
    zmq_describe_frames(frames, n, text, sizeof text);
    if (n != 3) fail_set(f, CODE_INVALID, "a reply of %zu frames, expected 3 ([id][Status][Response]): %s", n, text);
    else fail_set(f, CODE_INVALID, "a reply whose id frame is not %d bytes: %s", ZMQ_ID_BYTES, text);
    return false;
}

bool zmq_check_reply(call_t *c, const zframe *frames, failure_t *f) {
    pb_status *st = rpcarena__bench__v1__status__unpack(NULL, frames[1].len, frames[1].data);
    if (!st) {
        char text[400];
        zmq_describe_frames(frames, 3, text, sizeof text);
        fail_set(f, CODE_INVALID, "a reply whose Status frame does not decode: %s", text);
        return false;
    }
    uint32_t code = st->code;
    if (code != 0) {
        fail_set(f, CODE_RPC, "the server answered id %" PRIu64 " with status %u: %s",
                 zmq_get_id(frames[0].data), code, st->message ? st->message : "");
    }
    rpcarena__bench__v1__status__free_unpacked(st, NULL);
    if (code != 0) return false;
    return call_on_message(c, frames[2].data, frames[2].len, f) && call_on_status_ok(c, f);
}

bool zmq_pack_status(uint32_t code, const char *message, buf_t *out) {
    pb_status st = RPCARENA__BENCH__V1__STATUS__INIT;
    st.code = code;
    st.message = (char *)(message ? message : "");
    size_t n = rpcarena__bench__v1__status__get_packed_size(&st);
    out->len = out->off = 0;
    if (!buf_reserve(out, n ? n : 1)) return false;
    out->len = rpcarena__bench__v1__status__pack(&st, out->data);
    return true;
}
