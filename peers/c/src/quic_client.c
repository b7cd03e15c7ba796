#include "client.h"
bool quic_client_new(const client_args *a, const workload_t *w, const char *ca_pem, client_stack *out, failure_t *f) {
    fail_set(f, CODE_CONFIG, "quic: not built yet"); return false; }
