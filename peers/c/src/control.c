#include "control.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "json.h"

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cmd_cv = PTHREAD_COND_INITIALIZER;
static phase_id phase = PH_STARTUP;
static ctl_cmd pending = CTL_NONE;
static uint64_t pending_start_ns;
static counters_reader read_counters; /* set for a server */

const char *phase_name(phase_id p) {
    static const char *const names[] = {"startup", "listen",  "serve",   "connect", "validate",
                                        "warmup",  "armed",   "measure", "shutdown"};
    return names[p];
}

static void write_locked(const char *line) {
    size_t n = strlen(line);
    char *buf = malloc(n + 1);
    if (!buf) _exit(1);
    memcpy(buf, line, n);
    buf[n] = '\n';
    size_t off = 0;
    while (off < n + 1) {
        ssize_t w = write(STDOUT_FILENO, buf + off, n + 1 - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            diag("cannot write an event to stdout (%s); the controller is gone, exiting",
                 strerror(errno));
            _exit(1);
        }
        off += (size_t)w;
    }
    free(buf);
}

void out_event(const char *line) {
    pthread_mutex_lock(&out_mu);
    write_locked(line);
    pthread_mutex_unlock(&out_mu);
}

void out_event_then_phase(const char *line, phase_id next) {
    pthread_mutex_lock(&out_mu);
    write_locked(line);
    phase = next;
    pthread_mutex_unlock(&out_mu);
}

static _Noreturn void error_locked(phase_id p, fail_code code, const char *msg) {
    json_t j;
    json_init(&j);
    json_open(&j);
    json_int(&j, "protocol", 1);
    json_str(&j, "event", "error");
    json_str(&j, "phase", phase_name(p));
    json_str(&j, "code", code_name(code));
    json_str(&j, "message", msg);
    json_close(&j);
    write_locked(json_text(&j));
    diag("%s error during %s: %s", code_name(code), phase_name(p), msg);
    _exit(p == PH_STARTUP && code == CODE_CONFIG ? 2 : 1);
}

void out_error_exit(phase_id p, fail_code code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&out_mu); /* never released: nothing may follow the error */
    error_locked(p, code, msg);
}

static _Noreturn void stopped_locked(const server_counters *counters) {
    json_t j;
    stopped_event(&j, counters);
    write_locked(json_text(&j));
    _exit(0);
}

void out_stopped_exit(const server_counters *counters) {
    pthread_mutex_lock(&out_mu);
    stopped_locked(counters);
}

void control_set_phase(phase_id p) {
    pthread_mutex_lock(&out_mu);
    phase = p;
    pthread_mutex_unlock(&out_mu);
}

static void hand_over(ctl_cmd c, uint64_t t) {
    pending = c;
    pending_start_ns = t;
    pthread_cond_signal(&cmd_cv);
}

ctl_cmd control_wait(uint64_t *start_ns) {
    pthread_mutex_lock(&out_mu);
    while (pending == CTL_NONE) pthread_cond_wait(&cmd_cv, &out_mu);
    ctl_cmd c = pending;
    if (start_ns) *start_ns = pending_start_ns;
    pending = CTL_NONE;
    pthread_mutex_unlock(&out_mu);
    return c;
}

/* Answers a window command at once with the counters read now (out_mu held). */
static void window_locked(line_kind edge) {
    server_counters c = {0};
    read_counters(&c);
    json_t j;
    window_event(&j, edge, &c);
    write_locked(json_text(&j));
    json_free(&j);
}

/* The server's table: stdin is read only once serving (out_mu held). */
static void handle_server(line_kind kind, const char *line, uint64_t t) {
    if (kind == LINE_SHUTDOWN) {
        hand_over(CTL_SHUTDOWN, t);
    } else if (kind == LINE_WINDOW_START || kind == LINE_WINDOW_END) {
        window_locked(kind);
    } else if (kind == LINE_START) {
        error_locked(PH_SERVE, CODE_PROTOCOL,
                     "START is a client command; a server takes SHUTDOWN, WINDOW START or WINDOW END");
    } else {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "unknown command %.200s (expected SHUTDOWN, WINDOW START or WINDOW END)", line);
        error_locked(PH_SERVE, CODE_PROTOCOL, msg);
    }
}

/* The client's table, in the current phase (out_mu held). */
static void handle_client(line_kind kind, const char *line, uint64_t t) {
    bool start = kind == LINE_START, shutdown = kind == LINE_SHUTDOWN;
    char msg[300];
    if (start) snprintf(msg, sizeof msg, "START is not expected while in phase %s", phase_name(phase));
    else if (kind == LINE_WINDOW_START || kind == LINE_WINDOW_END)
        snprintf(msg, sizeof msg, "%s is a server command; a client takes START or SHUTDOWN", line);
    else snprintf(msg, sizeof msg, "unknown command %.200s (expected START or SHUTDOWN)", line);
    switch (phase) {
    case PH_ARMED:
        if (start) {
            phase = PH_MEASURE;
            hand_over(CTL_START, t);
        } else if (shutdown) {
            hand_over(CTL_SHUTDOWN, t);
        } else {
            error_locked(PH_ARMED, CODE_PROTOCOL, msg);
        }
        return;
    case PH_SAMPLED:
        if (shutdown) hand_over(CTL_SHUTDOWN, t);
        else error_locked(PH_SAMPLED, CODE_PROTOCOL,
                          start ? "START after the sample: one sample per client" : msg);
        return;
    default:
        /* startup, connect, validate, warmup, measure: stop at once */
        if (shutdown) stopped_locked(NULL);
        error_locked(phase == PH_STARTUP ? PH_CONNECT : phase, CODE_PROTOCOL, msg);
    }
}

static void handle(line_kind kind, const char *line, uint64_t t) {
    pthread_mutex_lock(&out_mu);
    if (read_counters) handle_server(kind, line, t);
    else handle_client(kind, line, t);
    pthread_mutex_unlock(&out_mu);
}

static void *stdin_thread(void *arg) {
    (void)arg;
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        ssize_t n = getline(&line, &cap, stdin);
        uint64_t t = now_ns();
        if (n < 0) break;
        char *s;
        line_kind kind = classify_line(line, &s);
        if (kind != LINE_BLANK) handle(kind, s, t);
    }
    /* End of stdin means SHUTDOWN, so a peer never outlives its controller. */
    handle(LINE_SHUTDOWN, "SHUTDOWN", now_ns());
    free(line);
    return NULL;
}

static void start_reader(phase_id phase_on_failure) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, stdin_thread, NULL) != 0)
        out_error_exit(phase_on_failure, CODE_INTERNAL, "cannot start the stdin reader thread");
    pthread_attr_destroy(&attr);
}

void control_start_client(void) { start_reader(PH_CONNECT); }

void control_start_server(counters_reader read) {
    read_counters = read;
    start_reader(PH_SERVE);
}
