/* The load engine's pure cores: phases, the open schedule on a fake clock, the tally and its
 * intervals, drain_ns, and the sample event's fields. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine.h"

static client_args args(load_kind load) {
    client_args a;
    memset(&a, 0, sizeof a);
    a.load = load;
    a.concurrency = 4;
    a.warmup_ms = 500;
    a.window_ms = 2500;
    a.drain_ms = 1000;
    a.settle_ms = 200;
    a.rate = 1000;
    return a;
}

static void phases_follow_the_arguments(void) {
    client_args a = args(LOAD_CLOSED);
    phase_t p;
    phase_make(&p, RUN_MEASURE, &a, 1000);
    CHECK(p.deadline == 1000 + 2500 * NS_PER_MS && p.drain_end == p.deadline + NS_PER_SEC);
    CHECK(p.n_intervals == 3); /* ceil(2.5 s) */
    phase_make(&p, RUN_WARMUP, &a, 0);
    CHECK(p.deadline == 500 * NS_PER_MS && p.n_intervals == 0);
    a = args(LOAD_SEND_SATURATION);
    phase_make(&p, RUN_MEASURE, &a, 0);
    CHECK(p.drain_end - p.deadline == 200 * NS_PER_MS); /* min(settle, drain) */
    phase_make(&p, RUN_VALIDATE, &a, 0);
    CHECK(p.load == LOAD_CLOSED);
}

static void the_constant_schedule_is_computed_not_summed(void) {
    schedule_t s;
    schedule_init(&s, ARRIVAL_CONSTANT, 3.0, 0, 100);
    CHECK(schedule_next(&s) == 100);
    CHECK(schedule_next(&s) == 100 + 333333333);
    CHECK(schedule_next(&s) == 100 + 666666666);
    for (int i = 3; i < 3000; i++) schedule_next(&s);
    CHECK(schedule_next(&s) == 100 + (uint64_t)floor(3000.0 * (1e9 / 3.0)));
}

static void the_poisson_schedule_is_seeded_with_the_right_mean(void) {
    schedule_t a, b, c;
    schedule_init(&a, ARRIVAL_POISSON, 1000, 7, 0);
    schedule_init(&b, ARRIVAL_POISSON, 1000, 7, 0);
    schedule_init(&c, ARRIVAL_POISSON, 1000, 8, 0);
    CHECK(schedule_next(&a) == 0); /* the first at t0 */
    schedule_next(&b);
    schedule_next(&c);
    bool same = true, differs = false;
    uint64_t last = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t x = schedule_next(&a), y = schedule_next(&b), z = schedule_next(&c);
        same = same && x == y;
        differs = differs || x != z;
        last = x;
    }
    CHECK(same && differs);
    double mean_gap_us = (double)last / 100000 / 1000.0;
    CHECK(mean_gap_us > 990 && mean_gap_us < 1010);
}

static void the_tally_counts_intervals_by_start_and_caps_the_drain(void) {
    client_args a = args(LOAD_OPEN);
    phase_t p;
    phase_make(&p, RUN_MEASURE, &a, 0);
    tally_t t;
    tally_init(&t, &p);
    /* started in second 0, ends in second 1: counts in second 0 */
    tally_ok(&t, &p, 900 * NS_PER_MS, 950 * NS_PER_MS, 1100 * NS_PER_MS, 1, 1, 10, 10);
    tally_ok(&t, &p, 2400 * NS_PER_MS, 2400 * NS_PER_MS, p.deadline + 5 * NS_PER_SEC, 1, 1, 10, 10);
    failure_t f;
    fail_set(&f, CODE_TIMEOUT, "late");
    tally_fail(&t, p.drain_end, 1, &f);
    CHECK(t.completed == 2 && t.failed == 1 && t.by_code[CODE_TIMEOUT] == 1);
    CHECK(t.iv_completed[0] == 1 && t.iv_completed[1] == 0 && t.iv_completed[2] == 1);
    CHECK(tally_drain_ns(&t, &p) == NS_PER_SEC); /* capped at the bound */
    /* corrected latency from the intended start, uncorrected from the actual one */
    CHECK(hdr_max(t.hist) >= (int64_t)(5100 * NS_PER_MS - NS_PER_MS));
    CHECK(hdr_min(t.uncorrected) <= (int64_t)(151 * NS_PER_MS) && hdr_min(t.uncorrected) >= (int64_t)(149 * NS_PER_MS));
    t.offered = 4; /* one intended start never started */
    char *line = sample_event(&t, &p, &a, NULL);
    CHECK(line && !strstr(line, "\"transport\""));
    CHECK(line && strstr(line, "\"completed\":\"2\"") && strstr(line, "\"failures\":{\"timeout\":\"1\"}"));
    CHECK(line && strstr(line, "\"first_failure\":\"late\"") && strstr(line, "\"fell_behind\":true"));
    CHECK(line && strstr(line, "\"window_ns\":\"2500000000\"") && strstr(line, "\"target_rate\":1000"));
    CHECK(line && strstr(line, "\"offset_ns\":\"2000000000\"") && !strstr(line, "null"));
    free(line);
    tally_t other;
    tally_init(&other, &p);
    tally_ok(&other, &p, 10, 10, 20, 1, 1, 10, 10);
    tally_merge(&t, &other);
    CHECK(t.completed == 3 && t.iv_completed[0] == 2 && t.hist->total_count == 3);
    tally_free(&other);
    tally_free(&t);
}

/* 1.3: the warmup's operations per tenth, by end (the drain in the last tenth), merged. */
static void warmup_segments_count_by_tenth(void) {
    client_args a = args(LOAD_CLOSED); /* 500 ms warmup: tenths of 50 ms */
    phase_t p;
    phase_make(&p, RUN_WARMUP, &a, 0);
    tally_t t, u;
    tally_init(&t, &p);
    tally_init(&u, &p);
    tally_ok(&t, &p, 0, 0, 10 * NS_PER_MS, 1, 1, 0, 0);    /* tenth 0 */
    tally_ok(&t, &p, 0, 0, 60 * NS_PER_MS, 1, 1, 0, 0);    /* tenth 1 */
    tally_ok(&u, &p, 0, 0, 499 * NS_PER_MS, 1, 1, 0, 0);   /* tenth 9 */
    tally_ok(&u, &p, 0, 0, 700 * NS_PER_MS, 1, 1, 0, 0);   /* the drain: tenth 9 */
    tally_merge(&t, &u);
    CHECK(t.segments[0] == 1 && t.segments[1] == 1 && t.segments[9] == 2 && t.completed == 4);
    uint64_t sum = 0;
    for (int k = 0; k < WARMUP_SEGMENTS; k++) sum += t.segments[k];
    CHECK(sum == t.completed);
    tally_free(&t);
    tally_free(&u);
    phase_make(&p, RUN_MEASURE, &a, 0);
    CHECK(p.segment_ns == 0); /* only the warmup has segments */
}

/* 1.3: send-saturation on send prints sent and no received; submit_cpu_ns when measured. */
static void send_saturation_on_send_prints_sent_only(void) {
    client_args a = args(LOAD_SEND_SATURATION);
    a.shape = SHAPE_SEND;
    a.streams = 2;
    phase_t p;
    phase_make(&p, RUN_MEASURE, &a, 0);
    tally_t t;
    tally_init(&t, &p);
    tally_ok(&t, &p, 5, 5, 10, 1, 0, 64, 0);
    t.sent = 1;
    t.max_in_flight = 2;
    t.has_submit_cpu = true;
    t.submit_cpu_ns = 12345;
    char *line = sample_event(&t, &p, &a, NULL);
    CHECK(line && strstr(line, "\"sent\":\"1\"") && !strstr(line, "received"));
    CHECK(line && strstr(line, "\"submit_cpu_ns\":\"12345\"") && strstr(line, "\"responses\":\"0\""));
    free(line);
    a.shape = SHAPE_CLIENT_STREAM;
    t.has_submit_cpu = false;
    line = sample_event(&t, &p, &a, NULL);
    CHECK(line && strstr(line, "\"received\":") && !strstr(line, "submit_cpu_ns"));
    free(line);
    tally_free(&t);
}

int main(void) {
    RUN(phases_follow_the_arguments);
    RUN(the_constant_schedule_is_computed_not_summed);
    RUN(the_poisson_schedule_is_seeded_with_the_right_mean);
    RUN(the_tally_counts_intervals_by_start_and_caps_the_drain);
    RUN(warmup_segments_count_by_tenth);
    RUN(send_saturation_on_send_prints_sent_only);
    DONE();
}
