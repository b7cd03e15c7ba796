/* Addresses and sockets: resolving HOST:PORT, the local address that routes to a server, and
 * the socket options of docs/stacks.md (TCP_NODELAY, TCP_CONGESTION cubic, 8 MiB UDP buffers). */
#ifndef RPCARENA_NETUTIL_H
#define RPCARENA_NETUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "util.h"

typedef struct {
    struct sockaddr_storage ss;
    socklen_t len;
} addr_t;

/* Resolves "host:port" (numeric or a name) to its first address. */
bool resolve_host_port(const char *text, addr_t *out, char *err, size_t errlen);
/* "127.0.0.1:40917" or "[::1]:40917". */
void addr_format(const addr_t *a, char *out, size_t outlen);
/* The local address the kernel routes to `remote` (port 0): connect() a UDP socket and read
 * getsockname(). */
bool local_address_for(const addr_t *remote, addr_t *local, char *err, size_t errlen);

/* TCP_NODELAY and TCP_CONGESTION=cubic; returns false (and warns once) if cubic is refused. */
bool tune_tcp_socket(int fd);
/* 8 MiB receive and send buffers (FORCE variants when privileged); returns the smaller of the
 * two sizes obtained. */
int set_udp_buffers(int fd);

#define UDP_BUFFER_BYTES (8 * 1024 * 1024)

#endif
