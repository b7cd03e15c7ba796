/* What both gRPC roles share: channel arguments (docs/stacks.md "grpc" as far as gRPC core's
 * C API exposes it), the socket mutator that sets TCP_NODELAY and cubic, and status text. */
#ifndef RPCARENA_GRPC_COMMON_H
#define RPCARENA_GRPC_COMMON_H

#include <grpc/grpc.h>
#include <stdbool.h>

/* Channel arguments of a client (server_name: GRPC_SSL_TARGET_NAME_OVERRIDE_ARG, NULL in
 * plaintext) or a server. Static storage: call once per process. */
const grpc_channel_args *grpc_peer_channel_args(bool client, const char *server_name);

/* How many sockets the mutator tuned, and how many refused cubic. */
unsigned grpc_mutated_sockets(void);
/* How many OpenSSL contexts grpc_openssl.c set to TLS 1.3 + X25519 (0: it never ran). */
unsigned grpc_tls_contexts_adjusted(void);

/* grpc_status_code name, e.g. "INVALID_ARGUMENT". */
const char *grpc_status_name(grpc_status_code code);

/* Copies a slice into a NUL-terminated string (truncated). */
void slice_text(grpc_slice s, char *out, size_t outlen);

/* Number of worker threads: the CPUs this process may use. */
unsigned worker_count(void);

#endif
