#include "engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Bounds on phases before the window (the Rust peer uses the same). */
#define VALIDATE_BOUND_NS (120ULL * NS_PER_SEC)

void phase_make(phase_t *p, run_kind kind, const client_args *a, uint64_t t0) {
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->load = a->load;
    p->t0 = t0;
    uint64_t drain = a->drain_ms * NS_PER_MS;
    switch (kind) {
    case RUN_VALIDATE:
        p->load = LOAD_CLOSED;
        p->deadline = t0 + 1; /* one operation, started now */
        p->drain_end = t0 + VALIDATE_BOUND_NS;
        break;
    case RUN_WARMUP:
        p->deadline = t0 + a->warmup_ms * NS_PER_MS;
        p->segment_ns = a->warmup_ms * NS_PER_MS / WARMUP_SEGMENTS;
        p->drain_end = p->deadline + (a->load == LOAD_SEND_SATURATION
                                          ? (a->settle_ms < a->drain_ms ? a->settle_ms : a->drain_ms) * NS_PER_MS
                                          : drain);
        break;
    case RUN_MEASURE:
        p->deadline = t0 + a->window_ms * NS_PER_MS;
        p->drain_end = p->deadline + (a->load == LOAD_SEND_SATURATION
                                          ? (a->settle_ms < a->drain_ms ? a->settle_ms : a->drain_ms) * NS_PER_MS
                                          : drain);
        p->n_intervals = (size_t)((a->window_ms + 999) / 1000);
        break;
    }
}

void tally_init(tally_t *t, const phase_t *p) {
    memset(t, 0, sizeof *t);
    t->hist = hist_new();
    t->open = p->load == LOAD_OPEN;
    if (t->open) {
        t->uncorrected = hist_new();
        t->lag = hist_new();
    }
    t->n_iv = p->n_intervals;
    if (t->n_iv) {
        t->iv = calloc(t->n_iv, sizeof *t->iv);
        t->iv_completed = calloc(t->n_iv, sizeof *t->iv_completed);
        if (!t->iv || !t->iv_completed) {
            diag("out of memory for %zu interval histograms", t->n_iv);
            abort();
        }
    }
}

void tally_free(tally_t *t) {
    if (t->hist) hdr_close(t->hist);
    if (t->uncorrected) hdr_close(t->uncorrected);
    if (t->lag) hdr_close(t->lag);
    for (size_t i = 0; i < t->n_iv; i++)
        if (t->iv[i]) hdr_close(t->iv[i]);
    free(t->iv);
    free(t->iv_completed);
    memset(t, 0, sizeof *t);
}

static void interval_record(tally_t *t, const phase_t *p, uint64_t start, uint64_t value) {
    if (!t->n_iv || start < p->t0) return;
    size_t k = (size_t)((start - p->t0) / NS_PER_SEC);
    if (k >= t->n_iv) k = t->n_iv - 1; /* cannot happen: nothing starts at the deadline */
    if (!t->iv[k]) t->iv[k] = hist_new(); /* lazily: an interval histogram is ~250 KiB */
    hist_record(t->iv[k], value);
    t->iv_completed[k]++;
}

static void segment_record(tally_t *t, const phase_t *p, uint64_t end) {
    if (!p->segment_ns) return;
    uint64_t k = end > p->t0 ? (end - p->t0) / p->segment_ns : 0;
    t->segments[k < WARMUP_SEGMENTS ? k : WARMUP_SEGMENTS - 1]++;
}

void tally_ok(tally_t *t, const phase_t *p, uint64_t intended, uint64_t start, uint64_t end,
              uint64_t requests, uint64_t responses, uint64_t request_bytes,
              uint64_t response_bytes) {
    uint64_t latency = end > intended ? end - intended : 0;
    t->completed++;
    t->requests += requests;
    t->responses += responses;
    t->request_bytes += request_bytes;
    t->response_bytes += response_bytes;
    hist_record(t->hist, latency);
    if (t->open) hist_record(t->uncorrected, end > start ? end - start : 0);
    interval_record(t, p, start, latency);
    segment_record(t, p, end);
    if (end > t->last_end) t->last_end = end;
}

void tally_message(tally_t *t, const phase_t *p, uint64_t start, uint64_t latency) {
    t->completed++;
    hist_record(t->hist, latency);
    interval_record(t, p, start, latency);
    segment_record(t, p, start + latency);
}

void tally_fail(tally_t *t, uint64_t end, uint64_t count, const failure_t *f) {
    t->failed += count;
    fail_code code = f->code > CODE_NONE && f->code < CODE_COUNT ? f->code : CODE_INTERNAL;
    t->by_code[code] += count;
    if (!t->has_failure || end < t->first_failure_at) {
        t->has_failure = true;
        t->first_failure_at = end;
        t->first_code = code;
        snprintf(t->first_failure, sizeof t->first_failure, "%s", f->msg);
    }
    if (end > t->last_end) t->last_end = end;
}

void tally_merge(tally_t *into, const tally_t *from) {
    into->completed += from->completed;
    into->failed += from->failed;
    into->requests += from->requests;
    into->responses += from->responses;
    into->request_bytes += from->request_bytes;
    into->response_bytes += from->response_bytes;
    for (int c = 0; c < CODE_COUNT; c++) into->by_code[c] += from->by_code[c];
    if (from->has_failure && (!into->has_failure || from->first_failure_at < into->first_failure_at)) {
        into->has_failure = true;
        into->first_failure_at = from->first_failure_at;
        into->first_code = from->first_code;
        memcpy(into->first_failure, from->first_failure, sizeof into->first_failure);
    }
    hdr_add(into->hist, from->hist);
    if (into->uncorrected && from->uncorrected) hdr_add(into->uncorrected, from->uncorrected);
    if (into->lag && from->lag) hdr_add(into->lag, from->lag);
    for (size_t k = 0; k < into->n_iv && k < from->n_iv; k++) {
        if (!from->iv[k]) continue;
        if (!into->iv[k]) into->iv[k] = hist_new();
        hdr_add(into->iv[k], from->iv[k]);
        into->iv_completed[k] += from->iv_completed[k];
    }
    if (from->last_end > into->last_end) into->last_end = from->last_end;
    into->sent += from->sent;
    into->received += from->received;
    into->offered += from->offered;
    if (from->max_in_flight > into->max_in_flight) into->max_in_flight = from->max_in_flight;
    for (int k = 0; k < WARMUP_SEGMENTS; k++) into->segments[k] += from->segments[k];
    if (from->has_submit_cpu) {
        into->has_submit_cpu = true;
        into->submit_cpu_ns = from->submit_cpu_ns;
    }
}

void tally_operation(tally_t *t, const phase_t *p, const op_record *r) {
    if (!r->saturating) {
        if (r->failed) tally_fail(t, r->end, 1, r->fail);
        else tally_ok(t, p, r->intended, r->start, r->end, r->requests, r->responses, r->request_bytes,
                      r->response_bytes);
        return;
    }
    t->sent += r->sent;
    if (r->failed) {
        tally_fail(t, r->end, r->sent ? r->sent : 1, r->fail);
        return;
    }
    for (uint64_t i = 0; i < r->sent; i++) tally_message(t, p, r->starts[i], r->latencies[i]);
    t->received += r->sent;
    t->requests += r->sent;
    t->request_bytes += r->request_bytes;
    t->responses += 1;
    t->response_bytes += r->response_bytes;
    if (r->end > t->last_end) t->last_end = r->end;
}

uint64_t tally_drain_ns(const tally_t *t, const phase_t *p) {
    if (t->last_end <= p->deadline) return 0;
    uint64_t d = t->last_end - p->deadline;
    uint64_t bound = p->drain_end - p->deadline;
    return d < bound ? d : bound;
}

/* ---------------------------------------------------------------- open schedule */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro256ss(uint64_t s[4]) {
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(uint64_t rng[4]) { return (double)(xoshiro256ss(rng) >> 11) * 0x1.0p-53; }

void schedule_init(schedule_t *s, arrival_kind kind, double rate, uint64_t seed, uint64_t t0) {
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->rate = rate;
    s->t0 = t0;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
}

uint64_t schedule_next(schedule_t *s) {
    uint64_t i = s->i++;
    if (s->kind == ARRIVAL_CONSTANT) return s->t0 + (uint64_t)floor((double)i * (1e9 / s->rate));
    if (i > 0) s->offset_ns += -log(1.0 - rng_uniform(s->rng)) / s->rate * 1e9;
    return s->t0 + (uint64_t)s->offset_ns;
}

/* ---------------------------------------------------------------- sample event */

static void put_hist(json_t *j, const char *key, struct hdr_histogram *h) {
    char *text = hist_encode(h);
    if (!text) {
        diag("cannot encode a histogram");
        abort();
    }
    json_str(j, key, text);
    free(text);
}

char *sample_event(const tally_t *t, const phase_t *p, const client_args *a,
                   const tstats *transport) {
    json_t j;
    json_init(&j);
    json_open(&j);
    json_int(&j, "protocol", 1);
    json_str(&j, "event", "sample");
    json_counter(&j, "completed", t->completed);
    json_counter(&j, "failed", t->failed);
    json_counter(&j, "requests", t->requests);
    json_counter(&j, "responses", t->responses);
    json_counter(&j, "request_bytes", t->request_bytes);
    json_counter(&j, "response_bytes", t->response_bytes);
    json_counter(&j, "window_ns", p->deadline - p->t0);
    json_counter(&j, "drain_ns", tally_drain_ns(t, p));
    put_hist(&j, "histogram", t->hist);
    json_str(&j, "load", load_name(a->load));
    if (t->failed > 0) {
        json_open_obj(&j, "failures");
        for (int c = CODE_NONE + 1; c < CODE_COUNT; c++)
            if (t->by_code[c]) json_counter(&j, code_name((fail_code)c), t->by_code[c]);
        json_close(&j);
    }
    if (t->has_failure) json_str(&j, "first_failure", t->first_failure);
    json_open_arr(&j, "intervals");
    struct hdr_histogram *empty = NULL;
    for (size_t k = 0; k < p->n_intervals; k++) {
        json_open_obj(&j, NULL);
        json_counter(&j, "offset_ns", (uint64_t)k * NS_PER_SEC);
        json_counter(&j, "completed", t->iv_completed[k]);
        if (!t->iv[k] && !empty) empty = hist_new();
        put_hist(&j, "histogram", t->iv[k] ? t->iv[k] : empty);
        json_close(&j);
    }
    if (empty) hdr_close(empty);
    json_close_arr(&j);
    if (a->load != LOAD_CLOSED) json_counter(&j, "max_in_flight", t->max_in_flight);
    if (a->load == LOAD_SEND_SATURATION) {
        json_counter(&j, "sent", t->sent);
        /* on send only the server knows what arrived (its `commands`) */
        if (a->shape != SHAPE_SEND) json_counter(&j, "received", t->received);
    }
    if (t->has_submit_cpu) json_counter(&j, "submit_cpu_ns", t->submit_cpu_ns);
    if (a->load == LOAD_OPEN) {
        char rate[64];
        snprintf(rate, sizeof rate, "%.17g", a->rate);
        json_counter(&j, "offered", t->offered);
        json_raw(&j, "target_rate", rate);
        bool behind = t->completed + t->failed < t->offered ||
                      (t->lag && hdr_value_at_percentile(t->lag, 99.0) > (int64_t)NS_PER_MS);
        json_bool(&j, "fell_behind", behind);
        put_hist(&j, "uncorrected_histogram", t->uncorrected);
        put_hist(&j, "send_lag_histogram", t->lag);
    }
    transport_json(&j, transport);
    json_close(&j);
    if (j.oom) {
        json_free(&j);
        return NULL;
    }
    return j.data;
}
