#include "client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <gnutls/x509.h>

#include "control.h"
#include "json.h"

void pace_until(uint64_t until, uint64_t spin_ns) {
    uint64_t now = now_ns();
    if (now + spin_ns < until) {
        uint64_t wake = until - spin_ns;
        struct timespec ts = {(time_t)(wake / NS_PER_SEC), (long)(wake % NS_PER_SEC)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
        }
    }
    while (now_ns() < until) __builtin_ia32_pause();
}

static _Noreturn void close_and_stop(client_stack *s) {
    s->close(s->self);
    out_stopped_exit(NULL);
}

static void fail_phase_if_failed(const tally_t *t, phase_id ph) {
    if (t->failed == 0) return;
    out_error_exit(ph, t->first_code, "%s", t->first_failure);
}

/* The --ca file, refused unless it holds at least one parsable PEM certificate (both stacks get
 * the same check). */
static char *read_ca(const char *path) {
    char err[512] = "";
    size_t ca_len = 0;
    char *ca = read_file(path, 1 << 20, &ca_len, err, sizeof err);
    if (!ca) out_error_exit(PH_STARTUP, CODE_CONFIG, "--ca %s: %s", path, err);
    gnutls_x509_crt_t *crts = NULL;
    unsigned n_crts = 0;
    gnutls_datum_t pem = {(unsigned char *)ca, (unsigned)ca_len};
    int rc = gnutls_x509_crt_list_import2(&crts, &n_crts, &pem, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0 || n_crts == 0)
        out_error_exit(PH_STARTUP, CODE_CONFIG, "--ca %s: no usable PEM certificate (%s)", path,
                       rc < 0 ? gnutls_strerror(rc) : "none found");
    for (unsigned i = 0; i < n_crts; i++) gnutls_x509_crt_deinit(crts[i]);
    gnutls_free(crts);
    return ca;
}

/* Connects the stack (stdin is read from here on); returns how long connecting took. */
static uint64_t connect_stack(const client_args *a, const workload_t *w, const char *ca, client_stack *s) {
    failure_t f;
    fail_clear(&f);
    bool made = a->stack == STACK_GRPC  ? grpc_client_new(a, w, ca, s, &f)
                : a->stack == STACK_QUIC ? quic_client_new(a, w, ca, s, &f)
                                         : zmq_client_new(a, w, s, &f);
    if (!made) out_error_exit(PH_STARTUP, f.code, "%s", f.msg);

    /* A client reads stdin from the moment it starts connecting. */
    control_set_phase(PH_CONNECT);
    control_start_client();
    uint64_t t_connect = now_ns();
    if (!s->connect(s->self, &f)) out_error_exit(PH_CONNECT, f.code, "%s", f.msg);
    return now_ns() - t_connect;
}

/* Each phase runs on client_main's phase_t and tally_t: the stacks keep a pointer to the last
 * phase (cl->ph) after their run returns, so the phase must outlive it. */

/* The one validation operation; exits with its failure. */
static void validate(const client_args *a, client_stack *s, phase_t *p, tally_t *t) {
    control_set_phase(PH_VALIDATE);
    phase_make(p, RUN_VALIDATE, a, now_ns());
    tally_init(t, p);
    s->run(s->self, p, t);
    fail_phase_if_failed(t, PH_VALIDATE);
    if (t->completed != 1)
        out_error_exit(PH_VALIDATE, CODE_INTERNAL, "the validation operation did not complete");
    tally_free(t);
}

/* The warm-up (none when --warmup-ms is 0): how many operations it completed, in total and
 * per tenth of it. */
static uint64_t warm_up(const client_args *a, client_stack *s, phase_t *p, tally_t *t,
                        uint64_t segments[WARMUP_SEGMENTS]) {
    if (a->warmup_ms == 0) return 0;
    control_set_phase(PH_WARMUP);
    phase_make(p, RUN_WARMUP, a, now_ns());
    tally_init(t, p);
    s->run(s->self, p, t);
    fail_phase_if_failed(t, PH_WARMUP);
    bool streams = a->load == LOAD_SEND_SATURATION && a->shape == SHAPE_CLIENT_STREAM;
    uint64_t completed = streams ? t->received : t->completed;
    memcpy(segments, t->segments, sizeof t->segments);
    tally_free(t);
    return completed;
}

static void emit_armed(const client_args *a, const client_stack *s, uint64_t connect_ns,
                       uint64_t warmup_completed, const uint64_t *segments) {
    json_t j;
    json_init(&j);
    json_open(&j);
    json_int(&j, "protocol", 1);
    json_str(&j, "event", "armed");
    json_int(&j, "lanes", client_lanes(a));
    json_int(&j, "connections", s->connections);
    json_counter(&j, "connect_ns", connect_ns);
    json_counter(&j, "warmup_completed", warmup_completed);
    if (a->warmup_ms > 0) {
        json_open_arr(&j, "warmup_segments");
        for (int k = 0; k < WARMUP_SEGMENTS; k++) json_counter(&j, NULL, segments[k]);
        json_close_arr(&j);
    }
    json_close(&j);
    out_event_then_phase(json_text(&j), PH_ARMED);
    json_free(&j);
}

/* The measured phase from t0 (the START command's time) and its sample event. */
static void measure(const client_args *a, client_stack *s, uint64_t t0, phase_t *p, tally_t *t) {
    phase_make(p, RUN_MEASURE, a, t0);
    tally_init(t, p);
    s->run(s->self, p, t);
    tstats ts = {0};
    if (s->transport) s->transport(s->self, &ts);
    char *line = sample_event(t, p, a, &ts);
    if (!line) out_error_exit(PH_MEASURE, CODE_INTERNAL, "cannot build the sample event");
    out_event_then_phase(line, PH_SAMPLED);
    free(line);
    tally_free(t);
}

/* --conformance-fault: the malformed operation and a good one instead of measuring. */
static _Noreturn void fault_check(client_stack *s) {
    control_set_phase(PH_VALIDATE);
    failure_t f;
    fail_clear(&f);
    if (!s->fault_check || !s->fault_check(s->self, &f)) out_error_exit(PH_VALIDATE, f.code, "%s", f.msg);
    close_and_stop(s);
}

void client_main(const client_args *a) {
    char *ca = a->tls ? read_ca(a->ca) : NULL; /* --tls off (1.3): no --ca */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

    workload_t w = {a->shape, a->request_size, a->response_size, a->messages, a->payload};
    client_stack s = {0};
    uint64_t connect_ns = connect_stack(a, &w, ca, &s);
    if (a->fault != CF_NONE) fault_check(&s);
    phase_t p;
    tally_t t;
    validate(a, &s, &p, &t);
    uint64_t segments[WARMUP_SEGMENTS] = {0};
    uint64_t warmup_completed = warm_up(a, &s, &p, &t, segments);
    emit_armed(a, &s, connect_ns, warmup_completed, segments);

    uint64_t t0 = 0;
    if (control_wait(&t0) != CTL_START) close_and_stop(&s);
    measure(a, &s, t0, &p, &t);
    (void)control_wait(NULL); /* SHUTDOWN; anything else is handled by the stdin thread */
    close_and_stop(&s);
}
