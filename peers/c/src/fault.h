/* Conformance faults (docs/stacks.md "Conformance faults", "Conformance faults on zmq"): the
 * pure parts, as crates/peer/src/fault.rs defines them: how a fault server misshapes a response
 * and how a fault client misshapes its request. Pure: no I/O. */
#ifndef RPCARENA_FAULT_H
#define RPCARENA_FAULT_H

#include <stdint.h>

#include "args.h"
#include "workload.h"

/* Memory a fault needed beyond the scratch (a copied payload); free with fault_owned_free. */
typedef struct {
    uint8_t *payload;
    pb_structured *body_holder; /* unused: bodies live in the scratch */
} fault_owned;

void fault_owned_free(fault_owned *o);

/* Applies a per-message server fault (wrong-seq, short-payload, nonzero-byte,
 * corrupt-structured) to a response built with build_response into scratch `s`; other modes
 * leave it alone. False when out of memory. */
bool fault_response(server_fault f, pb_response *r, structured_t *s, fault_owned *o);

/* Applies a client fault (nonzero-byte, corrupt-structured, response-size-too-large) to a
 * request built with build_request into scratch `s`. False when out of memory. */
bool fault_request(client_fault f, pb_request *r, structured_t *s, fault_owned *o);

/* What the malformed request is, for messages: "a payload byte 0x01 in every request". */
const char *client_fault_describe(client_fault f);

/* Changes one field of a body and keeps its encoded size (an empty body becomes a wrong 3-byte
 * one); returns the body to use (built in `s` when the given one is NULL or empty). */
pb_structured *corrupt_structured(pb_structured *body, uint64_t seq, structured_t *s);

#endif
