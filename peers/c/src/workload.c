#include "workload.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const PATHS[SHAPE_COUNT] = {
    "/rpcarena.bench.v1.BenchService/Unary",
    "/rpcarena.bench.v1.BenchService/ClientStream",
    "/rpcarena.bench.v1.BenchService/ServerStream",
    "/rpcarena.bench.v1.BenchService/Bidi",
    "/rpcarena.bench.v1.BenchService/Command",
};

const char *method_path(shape_kind shape) { return PATHS[shape]; }

int shape_of_path(const uint8_t *path, size_t len) {
    for (int i = 0; i < SHAPE_COUNT; i++)
        if (strlen(PATHS[i]) == len && memcmp(PATHS[i], path, len) == 0) return i;
    return -1;
}

uint32_t requests_per_op(shape_kind shape, uint32_t n) {
    return (shape == SHAPE_CLIENT_STREAM || shape == SHAPE_BIDI) ? n : 1;
}
uint32_t responses_per_op(shape_kind shape, uint32_t n) {
    return (shape == SHAPE_SERVER_STREAM || shape == SHAPE_BIDI) ? n : 1;
}

/* ---------------------------------------------------------------- structured payloads */

static unsigned digits(uint64_t x) {
    unsigned n = 1;
    while (x >= 10) {
        x /= 10;
        n++;
    }
    return n;
}

static unsigned varint_len(uint64_t x) {
    unsigned n = 1;
    while (x >= 128) {
        x >>= 7;
        n++;
    }
    return n;
}

/* Encoded size of Item(k): id, name "item-k", score (fixed64), tags "bench" and "tag<k%10>". */
static uint64_t item_size(uint64_t k) {
    return (1 + varint_len(k + 1)) + (2 + 5 + digits(k)) + 9 + 7 + 6;
}

static uint64_t item_cost(uint64_t k) {
    uint64_t s = item_size(k);
    return 1 + varint_len(s) + s;
}

bool structured_plan_for(uint64_t seq, uint32_t size, structured_plan *plan) {
    memset(plan, 0, sizeof *plan);
    if (size == 0) return true;
    if (size < 3) return false;
    uint64_t used = 0;
    uint64_t base = 16 + digits(seq);
    if (base + 3 <= size) {
        plan->base = true;
        used = base;
        for (uint64_t k = 0;; k++) {
            uint64_t c = item_cost(k);
            if (used + c + 3 > size) break;
            used += c;
            plan->items++;
        }
    }
    plan->title_len = (uint32_t)(size - used - 2);
    return true;
}

static const char *const TAGS[10] = {"tag0", "tag1", "tag2", "tag3", "tag4",
                                     "tag5", "tag6", "tag7", "tag8", "tag9"};
static const char BENCH[] = "bench";

static int64_t created_ms(uint64_t seq) { return 1700000000000LL + (int64_t)(seq % 1000000000ULL); }

static char title_char(uint64_t seq, uint64_t j) { return (char)('a' + (seq % 26 + j) % 26); }

void structured_init(structured_t *s) { memset(s, 0, sizeof *s); }

void structured_free(structured_t *s) {
    free(s->title);
    free(s->items);
    free(s->item_ptrs);
    free(s->names);
    free(s->tags);
    memset(s, 0, sizeof *s);
}

static bool grow_items(structured_t *s, size_t n) {
    if (n <= s->cap) return true;
    size_t cap = s->cap ? s->cap : 4;
    while (cap < n) cap *= 2;
    pb_item *items = realloc(s->items, cap * sizeof *items);
    if (items) s->items = items;
    pb_item **ptrs = realloc(s->item_ptrs, cap * sizeof *ptrs);
    if (ptrs) s->item_ptrs = ptrs;
    char(*names)[24] = realloc(s->names, cap * sizeof *names);
    if (names) s->names = names;
    char *(*tags)[2] = realloc(s->tags, cap * sizeof *tags);
    if (tags) s->tags = tags;
    if (!items || !ptrs || !names || !tags) return false;
    /* every pointer into the arrays may have moved */
    for (size_t k = 0; k < s->cap; k++) {
        s->item_ptrs[k] = &s->items[k];
        s->items[k].name = s->names[k];
        s->items[k].tags = s->tags[k];
    }
    for (size_t k = s->cap; k < cap; k++) {
        pb_item init = RPCARENA__BENCH__V1__ITEM__INIT;
        s->items[k] = init;
        s->item_ptrs[k] = &s->items[k];
        snprintf(s->names[k], sizeof s->names[k], "item-%zu", k);
        s->items[k].id = k + 1;
        s->items[k].name = s->names[k];
        s->items[k].score = (double)(k + 1) * 0.25;
        s->tags[k][0] = (char *)BENCH;
        s->tags[k][1] = (char *)TAGS[k % 10];
        s->items[k].n_tags = 2;
        s->items[k].tags = s->tags[k];
    }
    s->cap = cap;
    return true;
}

pb_structured *structured_build(structured_t *s, uint64_t seq, uint32_t size, bool *ok) {
    structured_plan plan;
    *ok = false;
    if (!structured_plan_for(seq, size, &plan)) return NULL;
    *ok = true;
    if (size == 0) return NULL;
    pb_structured init = RPCARENA__BENCH__V1__STRUCTURED__INIT;
    s->msg = init;
    if (plan.base) {
        pb_attr ainit = RPCARENA__BENCH__V1__STRUCTURED__ATTRIBUTES_ENTRY__INIT;
        s->attr = ainit;
        snprintf(s->seq_text, sizeof s->seq_text, "%" PRIu64, seq);
        s->attr.key = (char *)"seq";
        s->attr.value = s->seq_text;
        s->attr_ptr = &s->attr;
        s->msg.created_unix_ms = created_ms(seq);
        s->msg.n_attributes = 1;
        s->msg.attributes = &s->attr_ptr;
        if (!grow_items(s, plan.items)) {
            *ok = false;
            return NULL;
        }
        s->msg.n_items = plan.items;
        s->msg.items = plan.items ? s->item_ptrs : NULL;
    }
    if (s->title_cap < plan.title_len + 1) {
        char *t = realloc(s->title, plan.title_len + 1);
        if (!t) {
            *ok = false;
            return NULL;
        }
        s->title = t;
        s->title_cap = plan.title_len + 1;
    }
    for (uint32_t j = 0; j < plan.title_len; j++) s->title[j] = title_char(seq, j);
    s->title[plan.title_len] = 0;
    s->msg.title = s->title;
    return &s->msg;
}

uint64_t body_len(const pb_structured *body) {
    return body ? protobuf_c_message_get_packed_size((const ProtobufCMessage *)body) : 0;
}

#define WHY(...)                                                                            \
    do {                                                                                    \
        snprintf(why, whylen, __VA_ARGS__);                                                 \
        return false;                                                                       \
    } while (0)

bool structured_check(const pb_structured *got, uint64_t seq, uint32_t size, char *why,
                      size_t whylen) {
    structured_plan plan;
    if (!structured_plan_for(seq, size, &plan)) WHY("a structured payload of %u bytes cannot exist", size);
    const char *title = got && got->title ? got->title : "";
    size_t tlen = strlen(title);
    if (tlen != plan.title_len) WHY("structured body: title of %zu characters, expected %u", tlen, plan.title_len);
    for (uint32_t j = 0; j < plan.title_len; j++)
        if (title[j] != title_char(seq, j)) WHY("structured body: title character %u differs", j);
    int64_t ms = got ? got->created_unix_ms : 0;
    int64_t want_ms = plan.base ? created_ms(seq) : 0;
    if (ms != want_ms) WHY("structured body: created_unix_ms %" PRId64 ", expected %" PRId64, ms, want_ms);
    size_t n_items = got ? got->n_items : 0;
    if (n_items != plan.items) WHY("structured body: %zu items, expected %u", n_items, plan.items);
    char name[32];
    for (uint32_t k = 0; k < plan.items; k++) {
        const pb_item *it = got->items[k];
        snprintf(name, sizeof name, "item-%u", k);
        if (it->id != (uint64_t)k + 1) WHY("structured body: item %u has id %" PRIu64, k, it->id);
        if (!it->name || strcmp(it->name, name) != 0) WHY("structured body: item %u has the wrong name", k);
        if (it->score != (double)(k + 1) * 0.25) WHY("structured body: item %u has score %g", k, it->score);
        if (it->n_tags != 2 || strcmp(it->tags[0], BENCH) != 0 || strcmp(it->tags[1], TAGS[k % 10]) != 0)
            WHY("structured body: item %u has the wrong tags", k);
    }
    size_t n_attr = got ? got->n_attributes : 0;
    if (n_attr != (plan.base ? 1u : 0u)) WHY("structured body: %zu attributes, expected %u", n_attr, plan.base ? 1 : 0);
    if (plan.base) {
        char seq_text[24];
        snprintf(seq_text, sizeof seq_text, "%" PRIu64, seq);
        const pb_attr *a = got->attributes[0];
        if (!a->key || strcmp(a->key, "seq") != 0 || !a->value || strcmp(a->value, seq_text) != 0)
            WHY("structured body: attributes are not {\"seq\": \"%s\"}", seq_text);
    }
    return true;
}

bool build_request(structured_t *s, payload_kind kind, uint64_t seq, uint32_t size,
                   uint32_t response_size, uint32_t response_messages, pb_request *out) {
    pb_request init = RPCARENA__BENCH__V1__REQUEST__INIT;
    *out = init;
    out->seq = seq;
    out->response_size = response_size;
    out->response_messages = response_messages;
    if (kind == PAYLOAD_ZEROS) {
        out->payload.data = (uint8_t *)zeros();
        out->payload.len = size;
        return true;
    }
    bool ok;
    out->payload_kind = RPCARENA__BENCH__V1__PAYLOAD_KIND__PAYLOAD_KIND_STRUCTURED;
    out->body = structured_build(s, seq, size, &ok);
    return ok;
}

bool build_response(structured_t *s, payload_kind kind, uint64_t seq, uint32_t size,
                    pb_response *out) {
    pb_response init = RPCARENA__BENCH__V1__RESPONSE__INIT;
    *out = init;
    out->seq = seq;
    if (kind == PAYLOAD_ZEROS) {
        out->payload.data = (uint8_t *)zeros();
        out->payload.len = size;
        return true;
    }
    bool ok;
    out->body = structured_build(s, seq, size, &ok);
    return ok;
}

/* ---------------------------------------------------------------- client side */

void call_init(call_t *c, const workload_t *w, uint64_t seq) {
    memset(c, 0, sizeof *c);
    c->w = w;
    c->seq = seq;
    c->n_req = requests_per_op(w->shape, w->messages);
    c->n_resp = responses_per_op(w->shape, w->messages);
}

bool call_next_request(call_t *c, structured_t *s, pb_request *out) {
    const workload_t *w = c->w;
    bool streamed = w->shape == SHAPE_CLIENT_STREAM || w->shape == SHAPE_BIDI;
    uint64_t seq = streamed ? c->sent : c->seq;
    uint32_t response_messages = w->shape == SHAPE_SERVER_STREAM ? w->messages : 0;
    /* a command asks for no response (docs/peer-protocol.md "Shapes", send) */
    uint32_t response_size = w->shape == SHAPE_SEND ? 0 : w->response_size;
    c->sent++;
    return build_request(s, w->payload, seq, w->request_size, response_size, response_messages,
                         out);
}

/* The payload of a response or summary: zeros of `size` bytes and no body, or a body equal to
 * Structured(seq, size) and no bytes. */
static bool check_payload(const char *what, payload_kind kind, const ProtobufCBinaryData *payload,
                          const pb_structured *body, uint64_t seq, uint32_t size, failure_t *f) {
    char why[300];
    if (kind == PAYLOAD_ZEROS) {
        if (body) {
            fail_set(f, CODE_INVALID, "%s carries a structured body; zeros were asked for", what);
            return false;
        }
        if (payload->len != size) {
            fail_set(f, CODE_INVALID, "%s payload is %zu bytes, expected %u", what, payload->len, size);
            return false;
        }
        if (!all_zero(payload->data, payload->len)) {
            fail_set(f, CODE_INVALID, "%s payload has a non-zero byte", what);
            return false;
        }
        return true;
    }
    if (payload->len != 0) {
        fail_set(f, CODE_INVALID, "%s carries %zu payload bytes; a structured body was asked for",
                 what, payload->len);
        return false;
    }
    if (!structured_check(body, seq, size, why, sizeof why)) {
        fail_set(f, CODE_INVALID, "%s: %s", what, why);
        return false;
    }
    return true;
}

static bool check_summary_fields(const workload_t *w, const pb_summary *sum, uint64_t count,
                                 failure_t *f) {
    uint64_t want_bytes = count * (uint64_t)w->request_size;
    if (sum->count != count) {
        fail_set(f, CODE_INVALID, "summary count %" PRIu64 ", expected %" PRIu64, sum->count, count);
        return false;
    }
    if (sum->payload_bytes != want_bytes) {
        fail_set(f, CODE_INVALID, "summary payload_bytes %" PRIu64 ", expected %" PRIu64,
                 sum->payload_bytes, want_bytes);
        return false;
    }
    if (sum->last_seq != count - 1) {
        fail_set(f, CODE_INVALID, "summary last_seq %" PRIu64 ", expected %" PRIu64, sum->last_seq,
                 count - 1);
        return false;
    }
    return check_payload("summary", w->payload, &sum->payload, sum->body, sum->last_seq,
                         w->response_size, f);
}

bool call_on_message(call_t *c, const uint8_t *data, size_t len, failure_t *f) {
    const workload_t *w = c->w;
    if (c->received >= c->n_resp) {
        fail_set(f, CODE_INVALID, "the server sent more than the %u response message%s asked for",
                 c->n_resp, c->n_resp == 1 ? "" : "s");
        return false;
    }
    bool ok;
    if (w->shape == SHAPE_SEND) {
        /* gRPC's Command answers Empty: nothing to check but that it decodes */
        Rpcarena__Bench__V1__Empty *e = rpcarena__bench__v1__empty__unpack(NULL, len, data);
        if (!e) {
            fail_set(f, CODE_INVALID, "undecodable Empty message (%zu bytes)", len);
            return false;
        }
        rpcarena__bench__v1__empty__free_unpacked(e, NULL);
        ok = true;
    } else if (w->shape == SHAPE_CLIENT_STREAM) {
        pb_summary *sum = rpcarena__bench__v1__summary__unpack(NULL, len, data);
        if (!sum) {
            fail_set(f, CODE_INVALID, "undecodable summary message (%zu bytes)", len);
            return false;
        }
        ok = check_summary_fields(w, sum, w->messages, f);
        if (ok) c->response_bytes += sum->body ? body_len(sum->body) : sum->payload.len;
        rpcarena__bench__v1__summary__free_unpacked(sum, NULL);
    } else {
        pb_response *r = rpcarena__bench__v1__response__unpack(NULL, len, data);
        if (!r) {
            fail_set(f, CODE_INVALID, "undecodable response message (%zu bytes)", len);
            return false;
        }
        uint64_t want = w->shape == SHAPE_UNARY ? c->seq : c->received;
        char what[64];
        snprintf(what, sizeof what, "response %u", c->received);
        if (r->seq != want) {
            fail_set(f, CODE_INVALID, "response %u: seq %" PRIu64 ", expected %" PRIu64, c->received,
                     r->seq, want);
            ok = false;
        } else {
            ok = check_payload(what, w->payload, &r->payload, r->body, r->seq, w->response_size, f);
        }
        if (ok) c->response_bytes += r->body ? body_len(r->body) : r->payload.len;
        rpcarena__bench__v1__response__free_unpacked(r, NULL);
    }
    if (ok) c->received++;
    return ok;
}

bool call_on_status_ok(call_t *c, failure_t *f) {
    if (c->received != c->n_resp) {
        fail_set(f, CODE_INVALID, "status OK after %u of %u response messages", c->received, c->n_resp);
        return false;
    }
    return true;
}

bool check_stream_summary(const workload_t *w, uint64_t sent, const uint8_t *data, size_t len,
                          uint64_t *response_bytes, failure_t *f) {
    pb_summary *sum = rpcarena__bench__v1__summary__unpack(NULL, len, data);
    if (!sum) {
        fail_set(f, CODE_INVALID, "undecodable summary message (%zu bytes)", len);
        return false;
    }
    bool ok = check_summary_fields(w, sum, sent, f);
    if (ok) *response_bytes = sum->body ? body_len(sum->body) : sum->payload.len;
    rpcarena__bench__v1__summary__free_unpacked(sum, NULL);
    return ok;
}

/* ---------------------------------------------------------------- server side */

void serve_init(serve_t *v, shape_kind shape) {
    memset(v, 0, sizeof *v);
    v->shape = shape;
}

void pb_request_free(pb_request *r) {
    if (r) rpcarena__bench__v1__request__free_unpacked(r, NULL);
}

bool serve_on_request(serve_t *v, const uint8_t *data, size_t len, pb_request **out, char *why,
                      size_t whylen) {
    *out = NULL;
    uint32_t k = v->received;
    pb_request *r = rpcarena__bench__v1__request__unpack(NULL, len, data);
    if (!r) WHY("request %u is not a valid rpcarena.bench.v1.Request (%zu bytes)", k, len);
    char inner[300];
    uint64_t plen = 0;
    bool ok = false;
    do {
        if (r->payload_kind == RPCARENA__BENCH__V1__PAYLOAD_KIND__PAYLOAD_KIND_ZEROS) {
            if (r->body) { snprintf(why, whylen, "request %u: a zeros request carries a structured body", k); break; }
            if (!all_zero(r->payload.data, r->payload.len)) { snprintf(why, whylen, "request %u: a payload byte is not zero", k); break; }
            plen = r->payload.len;
        } else if (r->payload_kind == RPCARENA__BENCH__V1__PAYLOAD_KIND__PAYLOAD_KIND_STRUCTURED) {
            if (r->payload.len) { snprintf(why, whylen, "request %u: a structured request carries %zu payload bytes", k, r->payload.len); break; }
            plen = body_len(r->body);
            if (plen == 1 || plen == 2) { snprintf(why, whylen, "request %u: a structured body of %" PRIu64 " bytes cannot exist", k, plen); break; }
            if (!structured_check(r->body, r->seq, (uint32_t)plen, inner, sizeof inner)) { snprintf(why, whylen, "request %u: %s", k, inner); break; }
        } else {
            snprintf(why, whylen, "request %u: payload_kind %d is neither zeros (0) nor structured (1)", k, (int)r->payload_kind);
            break;
        }
        if (v->shape == SHAPE_SEND && r->response_size != 0) { snprintf(why, whylen, "command %u: response_size %u; a one-way command asks for no response (0)", k, r->response_size); break; }
        if (r->response_size > MAX_PAYLOAD) { snprintf(why, whylen, "request %u: response_size %u is above the maximum %u", k, r->response_size, MAX_PAYLOAD); break; }
        if (r->payload_kind == RPCARENA__BENCH__V1__PAYLOAD_KIND__PAYLOAD_KIND_STRUCTURED && (r->response_size == 1 || r->response_size == 2)) {
            snprintf(why, whylen, "request %u: response_size %u: a structured payload is 0 or at least 3 bytes", k, r->response_size); break;
        }
        if (v->shape == SHAPE_SERVER_STREAM && (r->response_messages < 1 || r->response_messages > MAX_MESSAGES)) {
            snprintf(why, whylen, "request %u: response_messages %u is outside 1..=%u", k, r->response_messages, MAX_MESSAGES); break;
        }
        bool streamed = v->shape == SHAPE_CLIENT_STREAM || v->shape == SHAPE_BIDI;
        if (streamed && r->seq != k) { snprintf(why, whylen, "request %u: seq %" PRIu64 ", expected %u", k, r->seq, k); break; }
        if (k > 0) {
            if ((payload_kind)r->payload_kind != v->kind) { snprintf(why, whylen, "request %u: payload kind changed within the stream", k); break; }
            if (plen != v->payload_len) { snprintf(why, whylen, "request %u: payload length %" PRIu64 ", the first request had %" PRIu64, k, plen, v->payload_len); break; }
            if (r->response_size != v->response_size) { snprintf(why, whylen, "request %u: response_size %u, the first request had %u", k, r->response_size, v->response_size); break; }
        } else {
            v->kind = (payload_kind)r->payload_kind;
            v->payload_len = plen;
            v->response_size = r->response_size;
            v->response_messages = r->response_messages;
            v->first_seq = r->seq;
        }
        ok = true;
    } while (0);
    if (!ok) {
        rpcarena__bench__v1__request__free_unpacked(r, NULL);
        return false;
    }
    v->received++;
    v->payload_bytes += plen;
    v->last_seq = r->seq;
    *out = r;
    return true;
}

bool serve_on_end(const serve_t *v, char *why, size_t whylen) {
    if (v->received == 0) {
        if (v->shape == SHAPE_CLIENT_STREAM || v->shape == SHAPE_BIDI)
            WHY("a %s call carries at least one request", shape_name(v->shape));
        WHY("a %s call carries one request, got none", shape_name(v->shape));
    }
    return true;
}

bool build_summary(const serve_t *v, structured_t *s, pb_summary *out) {
    pb_summary init = RPCARENA__BENCH__V1__SUMMARY__INIT;
    *out = init;
    out->count = v->received;
    out->payload_bytes = v->payload_bytes;
    out->last_seq = v->last_seq;
    if (v->kind == PAYLOAD_ZEROS) {
        out->payload.data = (uint8_t *)zeros();
        out->payload.len = v->response_size;
        return true;
    }
    bool ok;
    out->body = structured_build(s, v->last_seq, v->response_size, &ok);
    return ok;
}

size_t request_size_of(const pb_request *r) { return rpcarena__bench__v1__request__get_packed_size(r); }
size_t pack_request(const pb_request *r, uint8_t *out) { return rpcarena__bench__v1__request__pack(r, out); }
size_t response_size_of(const pb_response *r) { return rpcarena__bench__v1__response__get_packed_size(r); }
size_t pack_response(const pb_response *r, uint8_t *out) { return rpcarena__bench__v1__response__pack(r, out); }
size_t summary_size_of(const pb_summary *r) { return rpcarena__bench__v1__summary__get_packed_size(r); }
size_t pack_summary(const pb_summary *r, uint8_t *out) { return rpcarena__bench__v1__summary__pack(r, out); }
