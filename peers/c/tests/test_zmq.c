/* The zmq stack's pure part (docs/stacks.md "zmq"): what a received message is, how a malformed
 * one is described (frame sizes and first bytes), the client's check of a reply, and the
 * conformance faults' misshapen messages. */
#include <string.h>

#include "check.h"
#include "fault.h"
#include "zmq_frames.h"

static const uint8_t ID1[8] = {0, 0, 0, 0, 0, 0, 0, 1};

static void ids_are_big_endian(void) {
    uint8_t b[8];
    zmq_put_id(b, 0x0102030405060708ULL);
    CHECK(b[0] == 1 && b[7] == 8);
    CHECK(zmq_get_id(b) == 0x0102030405060708ULL);
    CHECK(zmq_get_id(ID1) == 1);
}

static void inbound_messages_are_classified(void) {
    zinbound in;
    zframe hello = {(const uint8_t *)"HELLO", 5};
    zmq_parse_inbound(&hello, 1, &in);
    CHECK(in.kind == ZIN_HELLO);
    /* docs/stacks.md's example: [00 .. 01] [08 01] */
    const uint8_t body[2] = {0x08, 0x01};
    zframe msg[2] = {{ID1, 8}, {body, 2}};
    zmq_parse_inbound(msg, 2, &in);
    CHECK(in.kind == ZIN_MESSAGE && in.id == 1 && in.body.len == 2 && in.body.data == body);
    zframe three[3] = {{ID1, 8}, {body, 2}, {body, 2}};
    zmq_parse_inbound(three, 3, &in);
    CHECK(in.kind == ZIN_MALFORMED && in.id_ok && in.id == 1 && strstr(in.why, "3 frames, expected 2"));
    zframe short_id[2] = {{ID1, 7}, {body, 2}};
    zmq_parse_inbound(short_id, 2, &in);
    CHECK(in.kind == ZIN_MALFORMED && !in.id_ok && strstr(in.why, "an id frame of 7 bytes, expected 8"));
    zframe hello_bang = {(const uint8_t *)"HELLO!!", 7};
    zmq_parse_inbound(&hello_bang, 1, &in);
    CHECK(in.kind == ZIN_MALFORMED && !in.id_ok && strstr(in.why, "1 frame, expected 2"));
}

static void malformed_frames_are_described(void) {
    char text[400];
    zframe f[2] = {{ID1, 8}, {(const uint8_t *)"HELLO!!", 7}};
    zmq_describe_frames(f, 2, text, sizeof text);
    CHECK(strcmp(text, "2 frames of 8 and 7 bytes: [00 00 00 00 00 00 00 01] [48 45 4c 4c 4f 21 21]") == 0);
    uint8_t big[40] = {0};
    big[0] = 0xab;
    zframe g[3] = {{big, 40}, {NULL, 0}, {ID1, 8}};
    zmq_describe_frames(g, 3, text, sizeof text);
    CHECK(strcmp(text, "3 frames of 40, 0 and 8 bytes: [ab 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ...] [] "
                       "[00 00 00 00 00 00 00 01]") == 0);
    zmq_describe_frames(g, 0, text, sizeof text);
    CHECK(strcmp(text, "an empty message (no frames)") == 0);
    char tiny[16];
    zmq_describe_frames(g, 3, tiny, sizeof tiny);
    CHECK(strlen(tiny) == 15 && strcmp(tiny + 12, "...") == 0); /* cut, and says so */
}

static buf_t packed_response(uint64_t seq, uint32_t size, server_fault fault) {
    structured_t s;
    structured_init(&s);
    pb_response r;
    fault_owned o = {0};
    build_response(&s, PAYLOAD_ZEROS, seq, size, &r);
    fault_response(fault, &r, &s, &o);
    buf_t b = {0};
    buf_reserve(&b, response_size_of(&r) + 1);
    b.len = pack_response(&r, b.data);
    fault_owned_free(&o);
    structured_free(&s);
    return b;
}

static void replies_are_checked(void) {
    workload_t w = {SHAPE_UNARY, 16, 16, 1, PAYLOAD_ZEROS};
    call_t c;
    failure_t f;
    buf_t ok = packed_response(5, 16, SF_NONE), st = {0};
    zmq_pack_status(0, NULL, &st);
    CHECK(st.len == 0); /* an all-default Status is an empty frame */
    zframe good[3] = {{ID1, 8}, {st.data, st.len}, {ok.data, ok.len}};
    call_init(&c, &w, 5);
    CHECK(zmq_check_reply(&c, good, &f) && c.response_bytes == 16);
    call_init(&c, &w, 6);
    CHECK(!zmq_check_reply(&c, good, &f) && f.code == CODE_INVALID && strstr(f.msg, "seq 5, expected 6"));
    buf_t wrong = packed_response(5, 16, SF_NONZERO_BYTE);
    zframe bad[3] = {{ID1, 8}, {st.data, st.len}, {wrong.data, wrong.len}};
    call_init(&c, &w, 5);
    CHECK(!zmq_check_reply(&c, bad, &f) && f.code == CODE_INVALID && strstr(f.msg, "non-zero byte"));
    buf_t rej = {0};
    zmq_pack_status(3, "request 0: a payload byte is not zero", &rej);
    zframe refused[3] = {{ID1, 8}, {rej.data, rej.len}, {NULL, 0}};
    call_init(&c, &w, 5);
    CHECK(!zmq_check_reply(&c, refused, &f) && f.code == CODE_RPC && strstr(f.msg, "status 3: request 0"));
    uint64_t id;
    zframe four[4] = {{ID1, 8}, {NULL, 0}, {ok.data, ok.len}, {ok.data, ok.len}};
    CHECK(!zmq_reply_id(four, 4, &id, &f) && f.code == CODE_INVALID && strstr(f.msg, "a reply of 4 frames"));
    zframe short_id[3] = {{ID1, 4}, {NULL, 0}, {ok.data, ok.len}};
    CHECK(!zmq_reply_id(short_id, 3, &id, &f) && strstr(f.msg, "id frame is not 8 bytes"));
    CHECK(zmq_reply_id(good, 3, &id, &f) && id == 1);
    buf_free(&ok);
    buf_free(&st);
    buf_free(&wrong);
    buf_free(&rej);
}

/* The faults change exactly what crates/peer/src/fault.rs changes. */
static void faults_misshape_one_thing(void) {
    structured_t s;
    structured_init(&s);
    pb_response r;
    fault_owned o = {0};
    build_response(&s, PAYLOAD_ZEROS, 7, 4, &r);
    CHECK(fault_response(SF_SHORT_PAYLOAD, &r, &s, &o) && r.payload.len == 3 && all_zero(r.payload.data, 3));
    fault_owned_free(&o);
    build_response(&s, PAYLOAD_ZEROS, 7, 0, &r);
    CHECK(fault_response(SF_NONZERO_BYTE, &r, &s, &o) && r.payload.len == 1 && r.payload.data[0] == 1);
    fault_owned_free(&o);
    build_response(&s, PAYLOAD_STRUCTURED, 1, 64, &r);
    CHECK(fault_response(SF_CORRUPT_STRUCTURED, &r, &s, &o) && r.body->created_unix_ms == 1700000000002LL);
    CHECK(body_len(r.body) == 64); /* its size kept */
    build_response(&s, PAYLOAD_ZEROS, 7, 4, &r);
    CHECK(fault_response(SF_WRONG_SEQ, &r, &s, &o) && r.seq == 8);
    pb_request q;
    build_request(&s, PAYLOAD_ZEROS, 0, 8, 0, 0, &q);
    CHECK(fault_request(CF_NONZERO_BYTE, &q, &s, &o) && q.payload.len == 8 && q.payload.data[7] == 1);
    fault_owned_free(&o);
    build_request(&s, PAYLOAD_ZEROS, 0, 8, 0, 0, &q);
    CHECK(fault_request(CF_RESPONSE_SIZE_TOO_LARGE, &q, &s, &o) && q.response_size == MAX_PAYLOAD + 1);
    build_request(&s, PAYLOAD_STRUCTURED, 0, 0, 0, 0, &q);
    CHECK(fault_request(CF_CORRUPT_STRUCTURED, &q, &s, &o) && q.body && body_len(q.body) == 3);
    char why[300];
    CHECK(!structured_check(q.body, 0, 3, why, sizeof why)); /* a wrong 3-byte body */
    structured_free(&s);
}

int main(void) {
    RUN(ids_are_big_endian);
    RUN(inbound_messages_are_classified);
    RUN(malformed_frames_are_described);
    RUN(replies_are_checked);
    RUN(faults_misshape_one_thing);
    DONE();
}
