/* The native framing, byte for byte as docs/stacks.md's example shows it. */
#include <string.h>

#include "check.h"
#include "framing.h"
#include "workload.h"

static void the_documented_unary_call_parses(void) {
    static const char path[] = "/rpcarena.bench.v1.BenchService/Unary";
    buf_t b = {0};
    frame_append(&b, FT_HEADER, (const uint8_t *)path, 37);
    static const uint8_t req[] = {0x08, 0x01};
    frame_append(&b, FT_MESSAGE, req, 2);
    frame_append(&b, FT_END, NULL, 0);
    static const uint8_t expect_head[] = {0x01, 0x00, 0x00, 0x00, 0x25};
    CHECK(memcmp(b.data, expect_head, 5) == 0);
    CHECK(b.len == 5 + 37 + 5 + 2 + 5);
    frame_t f;
    size_t used;
    char why[200];
    CHECK(frame_parse(buf_head(&b), buf_avail(&b), &f, &used, why, sizeof why) == FR_FRAME);
    CHECK(f.type == FT_HEADER && shape_of_path(f.body, f.len) == SHAPE_UNARY);
    buf_consume(&b, used);
    CHECK(frame_parse(buf_head(&b), buf_avail(&b), &f, &used, why, sizeof why) == FR_FRAME);
    CHECK(f.type == FT_MESSAGE && f.len == 2 && f.body[1] == 1);
    buf_consume(&b, used);
    CHECK(frame_parse(buf_head(&b), 3, &f, &used, why, sizeof why) == FR_MORE);
    CHECK(frame_parse(buf_head(&b), buf_avail(&b), &f, &used, why, sizeof why) == FR_FRAME && f.type == FT_END);
    buf_free(&b);
    /* STATUS{code: 0} is an empty body */
    frame_append_status(&b, 0, "");
    static const uint8_t ok[] = {0x04, 0, 0, 0, 0};
    CHECK(b.len == 5 && memcmp(b.data, ok, 5) == 0);
    buf_free(&b);
}

static void malformed_frames_are_refused(void) {
    frame_t f;
    size_t used;
    char why[200];
    static const uint8_t unknown[] = {0x09, 0, 0, 0, 0};
    CHECK(frame_parse(unknown, 5, &f, &used, why, sizeof why) == FR_ERROR);
    static const uint8_t huge[] = {0x01, 0xff, 0xff, 0xff, 0xff};
    CHECK(frame_parse(huge, 5, &f, &used, why, sizeof why) == FR_ERROR);
    static const uint8_t limit[] = {0x02, 0x01, 0x00, 0x04, 0x00}; /* exactly 16 MiB + 1 KiB: wait */
    CHECK(frame_parse(limit, 5, &f, &used, why, sizeof why) == FR_MORE);
    static const uint8_t over[] = {0x02, 0x01, 0x00, 0x04, 0x01};
    CHECK(frame_parse(over, 5, &f, &used, why, sizeof why) == FR_ERROR);
    static const uint8_t end_body[] = {0x03, 0, 0, 0, 1, 0};
    CHECK(frame_parse(end_body, 6, &f, &used, why, sizeof why) == FR_ERROR);
    buf_t b = {0};
    frame_append_status(&b, 3, "request 5: seq 7, expected 5");
    uint32_t code;
    char msg[100];
    CHECK(status_decode(b.data + 5, b.len - 5, &code, msg, sizeof msg) && code == 3 && strstr(msg, "seq 7"));
    buf_free(&b);
}

int main(void) {
    RUN(the_documented_unary_call_parses);
    RUN(malformed_frames_are_refused);
    DONE();
}
