/* Payload generation (the test vector, exact sizes), and the validation duties of both roles. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "workload.h"

static size_t pack_body(const pb_structured *b, uint8_t **out) {
    size_t n = body_len(b);
    *out = malloc(n ? n : 1);
    if (b) protobuf_c_message_pack((const ProtobufCMessage *)b, *out);
    return n;
}

static void hex(const uint8_t *p, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", p[i]);
}

static void the_test_vector_encodes_exactly(void) {
    structured_t s;
    structured_init(&s);
    bool ok;
    pb_structured *b = structured_build(&s, 1, 64, &ok);
    CHECK(ok && b);
    uint8_t *bytes;
    size_t n = pack_body(b, &bytes);
    CHECK(n == 64);
    char text[200];
    hex(bytes, n, text);
    CHECK(strcmp(text, "0a0b62636465666768696a6b6c1081d095ffbc311a20080112066974656d2d3019000000000000d03f"
                       "220562656e636822047461673022080a03736571120131") == 0);
    free(bytes);
    structured_free(&s);
}

static void every_size_comes_out_exact(void) {
    structured_t s;
    structured_init(&s);
    static const uint64_t seqs[] = {0, 1, 9, 10, 127, 123456789, 18446744073709551615ULL};
    int wrong = 0;
    for (size_t k = 0; k < sizeof seqs / sizeof seqs[0]; k++) {
        for (uint32_t size = 0; size <= 600; size++) {
            if (size == 1 || size == 2) continue;
            bool ok;
            pb_structured *b = structured_build(&s, seqs[k], size, &ok);
            if (!ok || body_len(b) != size) wrong++;
            char why[200];
            if (!structured_check(b, seqs[k], size, why, sizeof why)) wrong++;
        }
    }
    CHECK(wrong == 0);
    static const uint32_t large[] = {4096, 65536, 1000003, 16u * 1024 * 1024};
    for (size_t k = 0; k < 4; k++) {
        bool ok;
        pb_structured *b = structured_build(&s, 42, large[k], &ok);
        CHECK(ok && body_len(b) == large[k]);
    }
    structured_plan p;
    CHECK(!structured_plan_for(0, 1, &p));
    CHECK(!structured_plan_for(0, 2, &p));
    structured_free(&s);
}

static void a_changed_body_is_caught(void) {
    structured_t s;
    structured_init(&s);
    bool ok;
    char why[200];
    pb_structured *b = structured_build(&s, 7, 300, &ok);
    CHECK(structured_check(b, 7, 300, why, sizeof why));
    CHECK(!structured_check(b, 8, 300, why, sizeof why)); /* another seq */
    b->title[0] ^= 1;
    CHECK(!structured_check(b, 7, 300, why, sizeof why));
    b->title[0] ^= 1;
    b->items[1]->score += 0.25;
    CHECK(!structured_check(b, 7, 300, why, sizeof why));
    b->items[1]->score -= 0.25;
    b->n_attributes = 0;
    CHECK(!structured_check(b, 7, 300, why, sizeof why));
    CHECK(structured_check(NULL, 3, 0, why, sizeof why)); /* a missing body is the empty message */
    structured_free(&s);
}

/* Packs a response into a heap buffer. */
static uint8_t *response_bytes(uint64_t seq, const uint8_t *payload, size_t n, size_t *len) {
    pb_response r = RPCARENA__BENCH__V1__RESPONSE__INIT;
    r.seq = seq;
    r.payload.data = (uint8_t *)payload;
    r.payload.len = n;
    *len = response_size_of(&r);
    uint8_t *out = malloc(*len + 1);
    pack_response(&r, out);
    return out;
}

static void the_client_checks_every_response(void) {
    workload_t w = {SHAPE_BIDI, 16, 8, 3, PAYLOAD_ZEROS};
    call_t c;
    failure_t f;
    uint8_t payload[8] = {0};
    size_t n;
    uint8_t *m;
    call_init(&c, &w, 0);
    for (uint64_t i = 0; i < 3; i++) {
        m = response_bytes(i, payload, 8, &n);
        CHECK(call_on_message(&c, m, n, &f));
        free(m);
    }
    CHECK(call_on_status_ok(&c, &f));
    m = response_bytes(3, payload, 8, &n);
    CHECK(!call_on_message(&c, m, n, &f) && f.code == CODE_INVALID); /* an extra one */
    free(m);

    call_init(&c, &w, 0);
    m = response_bytes(1, payload, 8, &n); /* wrong seq */
    CHECK(!call_on_message(&c, m, n, &f) && f.code == CODE_INVALID);
    free(m);
    m = response_bytes(0, payload, 7, &n); /* short payload */
    CHECK(!call_on_message(&c, m, n, &f));
    free(m);
    payload[5] = 1; /* a non-zero byte */
    m = response_bytes(0, payload, 8, &n);
    CHECK(!call_on_message(&c, m, n, &f));
    free(m);
    payload[5] = 0;
    m = response_bytes(0, payload, 8, &n);
    CHECK(call_on_message(&c, m, n, &f));
    free(m);
    CHECK(!call_on_status_ok(&c, &f) && f.code == CODE_INVALID); /* OK too early */
    uint8_t junk[3] = {0xff, 0xff, 0xff};
    CHECK(!call_on_message(&c, junk, 3, &f));
}

static void the_client_checks_the_summary(void) {
    workload_t w = {SHAPE_CLIENT_STREAM, 10, 4, 5, PAYLOAD_ZEROS};
    serve_t v;
    serve_init(&v, SHAPE_CLIENT_STREAM);
    structured_t s;
    structured_init(&s);
    char why[200];
    for (uint64_t i = 0; i < 5; i++) {
        pb_request req;
        build_request(&s, PAYLOAD_ZEROS, i, 10, 4, 0, &req);
        uint8_t buf[64];
        size_t n = pack_request(&req, buf);
        pb_request *got;
        CHECK(serve_on_request(&v, buf, n, &got, why, sizeof why));
        pb_request_free(got);
    }
    pb_summary sum;
    CHECK(build_summary(&v, &s, &sum));
    uint8_t buf[64];
    size_t n = pack_summary(&sum, buf);
    call_t c;
    failure_t f;
    call_init(&c, &w, 0);
    CHECK(call_on_message(&c, buf, n, &f));
    uint64_t bytes;
    CHECK(check_stream_summary(&w, 5, buf, n, &bytes, &f) && bytes == 4);
    CHECK(!check_stream_summary(&w, 6, buf, n, &bytes, &f));
    sum.count = 4;
    n = pack_summary(&sum, buf);
    call_init(&c, &w, 0);
    CHECK(!call_on_message(&c, buf, n, &f));
    structured_free(&s);
}

static size_t request_bytes(payload_kind kind, uint64_t seq, uint32_t size, uint32_t resp,
                            uint32_t msgs, uint8_t *out, structured_t *s) {
    pb_request r;
    build_request(s, kind, seq, size, resp, msgs, &r);
    return pack_request(&r, out);
}

static void the_server_checks_every_request(void) {
    structured_t s;
    structured_init(&s);
    static uint8_t buf[4096];
    char why[300];
    pb_request *got;
    serve_t v;

    serve_init(&v, SHAPE_UNARY);
    size_t n = request_bytes(PAYLOAD_ZEROS, 5, 100, 10, 0, buf, &s);
    CHECK(serve_on_request(&v, buf, n, &got, why, sizeof why));
    pb_request_free(got);
    buf[n - 3] = 1; /* a non-zero payload byte */
    serve_init(&v, SHAPE_UNARY);
    CHECK(!serve_on_request(&v, buf, n, &got, why, sizeof why));

    serve_init(&v, SHAPE_UNARY); /* a corrupted structured body */
    n = request_bytes(PAYLOAD_STRUCTURED, 5, 200, 10, 0, buf, &s);
    CHECK(serve_on_request(&v, buf, n, &got, why, sizeof why));
    pb_request_free(got);
    serve_init(&v, SHAPE_UNARY);
    buf[n - 1] ^= 1;
    CHECK(!serve_on_request(&v, buf, n, &got, why, sizeof why));

    serve_init(&v, SHAPE_BIDI); /* seq out of order */
    n = request_bytes(PAYLOAD_ZEROS, 0, 10, 10, 0, buf, &s);
    CHECK(serve_on_request(&v, buf, n, &got, why, sizeof why));
    pb_request_free(got);
    n = request_bytes(PAYLOAD_ZEROS, 2, 10, 10, 0, buf, &s);
    CHECK(!serve_on_request(&v, buf, n, &got, why, sizeof why));

    serve_init(&v, SHAPE_CLIENT_STREAM); /* payload length changing in a stream */
    n = request_bytes(PAYLOAD_ZEROS, 0, 10, 10, 0, buf, &s);
    CHECK(serve_on_request(&v, buf, n, &got, why, sizeof why));
    pb_request_free(got);
    n = request_bytes(PAYLOAD_ZEROS, 1, 11, 10, 0, buf, &s);
    CHECK(!serve_on_request(&v, buf, n, &got, why, sizeof why));

    serve_init(&v, SHAPE_UNARY); /* response_size too large */
    n = request_bytes(PAYLOAD_ZEROS, 0, 1, MAX_PAYLOAD + 1, 0, buf, &s);
    CHECK(!serve_on_request(&v, buf, n, &got, why, sizeof why));

    serve_init(&v, SHAPE_SERVER_STREAM); /* response_messages 0 */
    n = request_bytes(PAYLOAD_ZEROS, 0, 1, 1, 0, buf, &s);
    CHECK(!serve_on_request(&v, buf, n, &got, why, sizeof why));
    serve_init(&v, SHAPE_SERVER_STREAM);
    n = request_bytes(PAYLOAD_ZEROS, 0, 1, 1, 3, buf, &s);
    CHECK(serve_on_request(&v, buf, n, &got, why, sizeof why));
    pb_request_free(got);

    serve_init(&v, SHAPE_CLIENT_STREAM); /* an empty client stream */
    CHECK(!serve_on_end(&v, why, sizeof why));
    structured_free(&s);
}

/* 1.3's send: a command asks for no response (response_size 0, else refused); the client builds
 * it with response_size 0 and takes gRPC's Empty answer (no bytes) as the one response. */
static void commands_ask_for_nothing(void) {
    structured_t s;
    structured_init(&s);
    static uint8_t buf[4096];
    char why[300];
    pb_request *got;
    serve_t v;
    serve_init(&v, SHAPE_SEND);
    size_t n = request_bytes(PAYLOAD_ZEROS, 9, 64, 0, 0, buf, &s);
    CHECK(serve_on_request(&v, buf, n, &got, why, sizeof why) && got->seq == 9);
    pb_request_free(got);
    serve_init(&v, SHAPE_SEND);
    n = request_bytes(PAYLOAD_ZEROS, 9, 64, 5, 0, buf, &s);
    CHECK(!serve_on_request(&v, buf, n, &got, why, sizeof why) && strstr(why, "asks for no response"));
    workload_t w = {SHAPE_SEND, 64, 100, 1, PAYLOAD_ZEROS};
    call_t c;
    pb_request req;
    failure_t f;
    call_init(&c, &w, 3);
    CHECK(c.n_req == 1 && c.n_resp == 1);
    CHECK(call_next_request(&c, &s, &req) && req.seq == 3 && req.response_size == 0 && req.payload.len == 64);
    CHECK(call_on_message(&c, (const uint8_t *)"", 0, &f) && call_on_status_ok(&c, &f) && c.response_bytes == 0);
    const uint8_t junk[2] = {0xff, 0xff};
    call_init(&c, &w, 3);
    CHECK(!call_on_message(&c, junk, 2, &f) && f.code == CODE_INVALID && strstr(f.msg, "Empty"));
    structured_free(&s);
}

int main(void) {
    RUN(the_test_vector_encodes_exactly);
    RUN(every_size_comes_out_exact);
    RUN(a_changed_body_is_caught);
    RUN(the_client_checks_every_response);
    RUN(the_client_checks_the_summary);
    RUN(the_server_checks_every_request);
    RUN(commands_ask_for_nothing);
    DONE();
}
