/* The load engine's pure cores, shared by both stacks: one phase's clock bounds, the tally of
 * what operations did (histograms, per-second intervals, failures by code), the open model's
 * schedule, and the `sample` event (docs/peer-protocol.md "sample", "Load models"). */
#ifndef RPCARENA_ENGINE_H
#define RPCARENA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "hist.h"
#include "transport.h"
#include "util.h"

typedef enum { RUN_VALIDATE = 0, RUN_WARMUP, RUN_MEASURE } run_kind;

/* One phase: operations start while now < deadline; admitted ones may run to drain_end. */
typedef struct {
    run_kind kind;
    load_kind load;
    uint64_t t0, deadline, drain_end;
    size_t n_intervals; /* measure: ceil(window / 1 s); else 0 */
    uint64_t segment_ns; /* warmup: a tenth of it (armed.warmup_segments, 1.3); else 0 */
} phase_t;

#define WARMUP_SEGMENTS 10

/* Builds the phase of `kind` starting at t0 from the arguments. */
void phase_make(phase_t *p, run_kind kind, const client_args *a, uint64_t t0);

/* What operations did, for one worker (merged after the phase). */
typedef struct {
    uint64_t completed, failed, requests, responses, request_bytes, response_bytes;
    uint64_t by_code[CODE_COUNT];
    bool has_failure;
    uint64_t first_failure_at;
    fail_code first_code;
    char first_failure[768];
    struct hdr_histogram *hist, *uncorrected, *lag; /* uncorrected, lag: open model only */
    struct hdr_histogram **iv;
    uint64_t *iv_completed;
    size_t n_iv;
    uint64_t last_end;
    uint64_t sent, received, max_in_flight, offered;
    bool open;
    /* warmup: operations completed in each tenth (by end; the warmup's drain in the last) */
    uint64_t segments[WARMUP_SEGMENTS];
    /* 1.3: CPU of the one thread that submitted every operation (zmq), START to drain end */
    bool has_submit_cpu;
    uint64_t submit_cpu_ns;
} tally_t;

void tally_init(tally_t *t, const phase_t *p);
void tally_free(tally_t *t);
/* A completed operation: started at `start` (intended start `intended`, = start except in the
 * open model), ended at `end`. */
void tally_ok(tally_t *t, const phase_t *p, uint64_t intended, uint64_t start, uint64_t end,
              uint64_t requests, uint64_t responses, uint64_t request_bytes,
              uint64_t response_bytes);
/* `count` failed operations (send-saturation: messages), ending at `end`. */
void tally_fail(tally_t *t, uint64_t end, uint64_t count, const failure_t *f);
/* Send-saturation: one confirmed message of `latency` ns that started at `start`. */
void tally_message(tally_t *t, const phase_t *p, uint64_t start, uint64_t latency);
void tally_merge(tally_t *into, const tally_t *from);

/* How one operation ended, as both stacks' clients report it. */
typedef struct {
    bool failed;
    const failure_t *fail;
    uint64_t intended, start, end;
    uint32_t requests, responses;
    uint64_t request_bytes, response_bytes;
    /* send-saturation: the stream's messages (each one's start and latency) */
    bool saturating;
    uint64_t sent;
    const uint64_t *starts, *latencies;
} op_record;

/* Records an operation: completed or failed; send-saturation counts per message, and a failed
 * stream fails every message it sent (at least one). */
void tally_operation(tally_t *t, const phase_t *p, const op_record *r);

/* drain_ns: from the deadline to the last end, capped at the bound. */
uint64_t tally_drain_ns(const tally_t *t, const phase_t *p);

/* The open model's intended starts: constant (t0 + floor(i x 1e9/R)) or Poisson (exponential
 * gaps of mean 1/R from xoshiro256** seeded by splitmix64(seed), U = top 53 bits / 2^53). */
typedef struct {
    arrival_kind kind;
    double rate;
    uint64_t t0;
    uint64_t i;
    double offset_ns; /* poisson: the running sum of gaps */
    uint64_t rng[4];
} schedule_t;

void schedule_init(schedule_t *s, arrival_kind kind, double rate, uint64_t seed, uint64_t t0);
/* The intended start of the next operation (absolute ns). */
uint64_t schedule_next(schedule_t *s);
double rng_uniform(uint64_t rng[4]);

/* The `sample` event (a JSON line, malloc'd); `transport` NULL or not present: no transport
 * object. */
char *sample_event(const tally_t *t, const phase_t *p, const client_args *a,
                   const tstats *transport);

#endif
