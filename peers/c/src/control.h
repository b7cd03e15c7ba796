/* The peer's two channels to the controller: events on stdout (one line each, written whole
 * under one lock) and commands on stdin (read by a dedicated thread that enforces the lifecycle
 * tables of docs/peer-protocol.md "Lifecycle" and answers a server's window commands). */
#ifndef RPCARENA_CONTROL_H
#define RPCARENA_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

#include "commands.h"
#include "util.h"

typedef enum {
    PH_STARTUP = 0,
    PH_LISTEN,
    PH_SERVE,
    PH_CONNECT,
    PH_VALIDATE,
    PH_WARMUP,
    PH_ARMED,
    PH_MEASURE,
    PH_SAMPLED,
} phase_id;

/* The protocol's phase name ("sampled" reports errors as phase "shutdown"). */
const char *phase_name(phase_id p);

/* Writes one event line (without its newline) to stdout and flushes. A peer whose stdout is
 * gone has lost its controller: it exits 1. */
void out_event(const char *line);

/* Prints an `error` event and exits: 2 for startup/config, 1 otherwise. */
_Noreturn void out_error_exit(phase_id phase, fail_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints `stopped` (with the server's counters when counters is not NULL) and exits 0. */
_Noreturn void out_stopped_exit(const server_counters *counters);

/* Starts the stdin reader of a client, which reads from the moment it starts connecting. */
void control_start_client(void);

/* Starts the stdin reader of a server, once it serves. `read` gives the counters with which a
 * WINDOW START or WINDOW END is answered at once, from the reader thread. */
void control_start_server(counters_reader read);

/* Sets the lifecycle state (read by the stdin thread under the output lock). */
void control_set_phase(phase_id p);

/* Prints `line` and moves to phase `next` atomically with respect to the stdin thread (a
 * SHUTDOWN is either handled before the line or in the new phase). */
void out_event_then_phase(const char *line, phase_id next);

typedef enum { CTL_NONE = 0, CTL_START, CTL_SHUTDOWN } ctl_cmd;

/* Waits for a command the stdin thread hands to the main thread (armed, sampled, serve).
 * For START, *start_ns is the time the line was read (the window's t0). */
ctl_cmd control_wait(uint64_t *start_ns);

#endif
