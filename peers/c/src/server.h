/* The server role: load --cert/--key, bind --listen, print `ready`, serve until SHUTDOWN. */
#ifndef RPCARENA_SERVER_H
#define RPCARENA_SERVER_H

#include <stdatomic.h>

#include "args.h"
#include "commands.h"

_Noreturn void server_main(const server_args *a);
_Noreturn void grpc_server_main(const server_args *a, const char *cert_pem, const char *key_pem);
_Noreturn void quic_server_main(const server_args *a, const char *cert_pem, const char *key_pem);
_Noreturn void zmq_server_main(const server_args *a);

/* Remembers the message of the first call, command or frame the server rejected (or reply it
 * dropped), for `first_rejection` (1.3); later ones are ignored. Any thread. */
void server_note_rejection(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* That message, or NULL while nothing was rejected. */
const char *server_first_rejection(void);

/* Prints `ready` with the bound address and moves to serving: stdin is read from now on, and
 * window commands are answered with what `read` gives. */
void server_ready(const char *address, counters_reader read);
/* Prints `stopped` with what `read` gives and exits 0. */
_Noreturn void server_stopped(counters_reader read);

/* Bumps a server counter that one thread writes and the stdin thread reads for the window
 * events: a relaxed add, nothing is ordered by it. */
static inline void count_one(atomic_ullong *counter) {
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* Checks that the certificate chain and key parse and belong together (GnuTLS), so a bad file
 * is a startup/config error rather than a failed handshake later. */
bool check_server_credentials(const char *cert_pem, const char *key_pem, char *err, size_t errlen);

#endif
