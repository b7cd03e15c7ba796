// Sockets and addresses shared by both stacks: resolving --listen/--server, binding, socket
// options (TCP_NODELAY, TCP_CONGESTION, UDP buffers), and loading PEM files with GnuTLS.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "args.h"

namespace rpcarena {

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
  // "127.0.0.1:4000" or "[::1]:4000".
  std::string to_string() const;
  // "ipv4:127.0.0.1:4000" / "ipv6:[::1]:4000": a gRPC target with exactly this one address.
  std::string grpc_target() const;
};

// Resolves HOST:PORT to one address (the first getaddrinfo returns). Throws std::runtime_error.
SockAddr resolve(const HostPort& hp, int socktype);

// Sets TCP_CONGESTION to cubic; returns "cubic" or, if the kernel refuses, "host default" (and
// says why on stderr once).
std::string set_cubic(int fd);

// UDP receive and send buffers of `bytes` (SO_*BUFFORCE when privileged, else SO_*BUF); returns
// the smaller of the two sizes obtained (the kernel reports twice the requested value; this
// returns what was requested when that holds).
int set_udp_buffers(int fd, int bytes);

// The local address the kernel routes to `remote` (connect a UDP socket, getsockname).
SockAddr local_address_for(const SockAddr& remote);

// Checks that `pem` holds at least one parsable X.509 certificate; throws std::runtime_error.
void check_certificates_pem(const std::string& pem);

}  // namespace rpcarena
