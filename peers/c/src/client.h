/* The client role: the lifecycle of docs/peer-protocol.md (connect, validate one operation,
 * warm up, armed, START, the window and drain, sample), written once over a stack interface. */
#ifndef RPCARENA_CLIENT_H
#define RPCARENA_CLIENT_H

#include <stdbool.h>

#include "args.h"
#include "engine.h"
#include "util.h"
#include "workload.h"

/* One stack's client side. */
typedef struct {
    void *self;
    /* Opens the connection (TLS handshake included); f gets code tls, connect or config. */
    bool (*connect)(void *self, failure_t *f);
    /* Runs one phase of the load model to its end (every admitted operation finished or timed
     * out at p->drain_end) and merges what happened into out (initialized by the caller). */
    void (*run)(void *self, const phase_t *p, tally_t *out);
    /* Closes the connection (bounded in time). */
    void (*close)(void *self);
    /* The transport statistics of the last RUN_MEASURE phase (out->present false: none). */
    void (*transport)(void *self, tstats *out);
    /* --conformance-fault (zmq): the malformed operation, then a good one; false with why. */
    bool (*fault_check)(void *self, failure_t *f);
    unsigned connections;
} client_stack;

bool grpc_client_new(const client_args *a, const workload_t *w, const char *ca_pem,
                     client_stack *out, failure_t *f);
bool quic_client_new(const client_args *a, const workload_t *w, const char *ca_pem,
                     client_stack *out, failure_t *f);
bool zmq_client_new(const client_args *a, const workload_t *w, client_stack *out, failure_t *f);

/* Runs the client command; never returns. */
_Noreturn void client_main(const client_args *a);

/* The open model's pacing: sleeps until `until` with clock_nanosleep, the last `spin_ns` by
 * spinning (docs/peer-protocol.md "open": starts precise to microseconds). */
void pace_until(uint64_t until, uint64_t spin_ns);

#endif
