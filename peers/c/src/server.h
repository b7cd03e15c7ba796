/* The server role: load --cert/--key, bind --listen, print `ready`, serve until SHUTDOWN. */
#ifndef RPCARENA_SERVER_H
#define RPCARENA_SERVER_H

#include "args.h"

_Noreturn void server_main(const server_args *a);
_Noreturn void grpc_server_main(const server_args *a, const char *cert_pem, const char *key_pem);
_Noreturn void quic_server_main(const server_args *a, const char *cert_pem, const char *key_pem);

/* Prints `ready` with the bound address and moves to serving (stdin is read from now on). */
void server_ready(const char *address);
/* Prints `stopped` with the server's counters and exits 0. */
_Noreturn void server_stopped(unsigned long long rpcs, unsigned long long requests,
                              unsigned long long responses, unsigned long long rejected);

/* Checks that the certificate chain and key parse and belong together (GnuTLS), so a bad file
 * is a startup/config error rather than a failed handshake later. */
bool check_server_credentials(const char *cert_pem, const char *key_pem, char *err, size_t errlen);

#endif
