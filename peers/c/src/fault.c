#include "fault.h"

#include <stdlib.h>
#include <string.h>

void fault_owned_free(fault_owned *o) {
    free(o->payload);
    o->payload = NULL;
}

static const uint8_t ONE_BYTE[1] = {1};

/* A private copy of a zeros payload of `len` bytes with room for one more. */
static bool own_payload(ProtobufCBinaryData *p, size_t len, fault_owned *o) {
    o->payload = calloc(1, len + 1);
    if (!o->payload) return false;
    p->data = o->payload;
    p->len = len;
    return true;
}

pb_structured *corrupt_structured(pb_structured *body, uint64_t seq, structured_t *s) {
    bool ok = true;
    if (body && body->created_unix_ms != 0) {
        body->created_unix_ms += 1; /* 1.7e12 + seq mod 1e9 + 1 stays a 6-byte varint */
        return body;
    }
    if (!body || !body->title || !body->title[0]) body = structured_build(s, seq, 3, &ok);
    if (!body || !ok) return NULL;
    char first = body->title[0];
    body->title[0] = (char)('a' + ((first - 'a') % 26 + 1) % 26);
    return body;
}

/* short-payload, nonzero-byte and corrupt-structured on a payload or body built from seq. */
static bool corrupt_payload(server_fault f, ProtobufCBinaryData *payload, pb_structured **body,
                            uint64_t seq, structured_t *s, fault_owned *o) {
    bool ok = true;
    size_t n = payload->len;
    switch (f) {
    case SF_SHORT_PAYLOAD:
        if (!*body) {
            if (!own_payload(payload, n, o)) return false;
            payload->len = n ? n - 1 : 1;
        } else if (!(*body)->title || !(*body)->title[0]) {
            *body = structured_build(s, seq, 3, &ok);
        } else {
            (*body)->title[strlen((*body)->title) - 1] = 0;
        }
        return ok;
    case SF_NONZERO_BYTE:
        if (*body) {
            payload->data = (uint8_t *)ONE_BYTE;
            payload->len = 1;
            return true;
        }
        if (!own_payload(payload, n ? n : 1, o)) return false;
        payload->data[payload->len - 1] = 1;
        return true;
    case SF_CORRUPT_STRUCTURED:
        if (!*body) *body = structured_build(s, seq, 3, &ok);
        else *body = corrupt_structured(*body, seq, s);
        return ok && *body;
    default: return true;
    }
}

bool fault_response(server_fault f, pb_response *r, structured_t *s, fault_owned *o) {
    if (f == SF_WRONG_SEQ) {
        r->seq += 1;
        return true;
    }
    return corrupt_payload(f, &r->payload, &r->body, r->seq, s, o);
}

bool fault_request(client_fault f, pb_request *r, structured_t *s, fault_owned *o) {
    size_t n = r->payload.len;
    switch (f) {
    case CF_NONZERO_BYTE:
        if (r->payload_kind == RPCARENA__BENCH__V1__PAYLOAD_KIND__PAYLOAD_KIND_STRUCTURED) {
            r->payload.data = (uint8_t *)ONE_BYTE;
            r->payload.len = 1;
            return true;
        }
        if (!own_payload(&r->payload, n ? n : 1, o)) return false;
        r->payload.data[r->payload.len - 1] = 1;
        return true;
    case CF_CORRUPT_STRUCTURED:
        r->body = corrupt_structured(r->body, r->seq, s);
        return r->body != NULL;
    case CF_RESPONSE_SIZE_TOO_LARGE: r->response_size = MAX_PAYLOAD + 1; return true;
    case CF_RESPONSE_MESSAGES_ZERO: r->response_messages = 0; return true;
    default: return true;
    }
}

const char *client_fault_describe(client_fault f) {
    switch (f) {
    case CF_NONZERO_BYTE: return "a payload byte 0x01 in every request";
    case CF_CORRUPT_STRUCTURED: return "a structured body with one field changed in every request";
    case CF_SEQ_ORDER: return "requests with seq 0, 2, 1, ... (out of order)";
    case CF_LENGTH_CHANGE: return "a second request whose payload length differs from the first's";
    case CF_RESPONSE_SIZE_TOO_LARGE: return "response_size 16777217, above the 16 MiB maximum";
    case CF_RESPONSE_MESSAGES_ZERO: return "response_messages 0 in a server stream";
    case CF_EMPTY_STREAM: return "a request stream that ends before any request";
    default: return "no fault";
    }
}
