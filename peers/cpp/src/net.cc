#include "net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <gnutls/x509.h>

#include "events.h"

namespace rpcarena {

std::string SockAddr::to_string() const {
  char host[INET6_ADDRSTRLEN] = {0};
  if (family() == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
  inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
}

std::string SockAddr::grpc_target() const {
  return (family() == AF_INET6 ? "ipv6:" : "ipv4:") + to_string();
}

SockAddr resolve(const HostPort& hp, int socktype) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(hp.port);
  int rc = getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw std::runtime_error("cannot resolve " + hp.text + ": " + gai_strerror(rc));
  }
  SockAddr out;
  std::memcpy(&out.storage, res->ai_addr, res->ai_addrlen);
  out.len = res->ai_addrlen;
  freeaddrinfo(res);
  return out;
}

std::string set_cubic(int fd) {
  static std::atomic<bool> warned{false};
  const char algo[] = "cubic";
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, algo, sizeof algo - 1) == 0) return "cubic";
  if (!warned.exchange(true)) {
    diag(std::string("cannot set TCP_CONGESTION cubic (") + std::strerror(errno) +
         "); the host default congestion control stays");
  }
  return "host default";
}

int set_udp_buffers(int fd, int bytes) {
  bool forced = setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) == 0 &&
                setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) == 0;
  if (!forced) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  }
  int rcv = 0, snd = 0;
  socklen_t l = sizeof rcv;
  getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &l);
  l = sizeof snd;
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &l);
  int got = std::min(rcv, snd) / 2;  // Linux reports the doubled bookkeeping size
  if (got < bytes) {
    diag("UDP socket buffers are " + std::to_string(got) + " bytes, below the " +
         std::to_string(bytes) + " asked for (raise net.core.rmem_max/wmem_max or run privileged)");
  }
  return got;
}

SockAddr local_address_for(const SockAddr& remote) {
  int fd = socket(remote.family(), SOCK_DGRAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  SockAddr local;
  local.len = sizeof local.storage;
  if (connect(fd, remote.sa(), remote.len) != 0 || getsockname(fd, local.sa(), &local.len) != 0) {
    int e = errno;
    close(fd);
    throw std::runtime_error("no route to " + remote.to_string() + ": " + std::strerror(e));
  }
  close(fd);
  if (local.family() == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&local.storage)->sin6_port = 0;
  } else {
    reinterpret_cast<sockaddr_in*>(&local.storage)->sin_port = 0;
  }
  return local;
}

void check_certificates_pem(const std::string& pem) {
  gnutls_datum_t data{reinterpret_cast<unsigned char*>(const_cast<char*>(pem.data())),
                      static_cast<unsigned>(pem.size())};
  gnutls_x509_crt_t* list = nullptr;
  unsigned int n = 0;
  int rc = gnutls_x509_crt_list_import2(&list, &n, &data, GNUTLS_X509_FMT_PEM, 0);
  if (rc < 0) throw std::runtime_error(gnutls_strerror(rc));
  for (unsigned i = 0; i < n; ++i) gnutls_x509_crt_deinit(list[i]);
  gnutls_free(list);
  if (n == 0) throw std::runtime_error("no PEM certificate in it");
}

}  // namespace rpcarena
