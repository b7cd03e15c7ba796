#include "netutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"

bool resolve_host_port(const char *text, addr_t *out, char *err, size_t errlen) {
    char host[ARG_TEXT], port[8];
    uint16_t p;
    if (!split_host_port(text, host, sizeof host, &p)) {
        snprintf(err, errlen, "%s is not HOST:PORT", text);
        return false;
    }
    snprintf(port, sizeof port, "%u", p);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "cannot resolve %s: %s", text, gai_strerror(rc));
        return false;
    }
    memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

void addr_format(const addr_t *a, char *out, size_t outlen) {
    char host[INET6_ADDRSTRLEN];
    if (a->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&a->ss;
        inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
        snprintf(out, outlen, "[%s]:%u", host, ntohs(s->sin6_port));
    } else {
        const struct sockaddr_in *s = (const struct sockaddr_in *)&a->ss;
        inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
        snprintf(out, outlen, "%s:%u", host, ntohs(s->sin_port));
    }
}

bool local_address_for(const addr_t *remote, addr_t *local, char *err, size_t errlen) {
    int fd = socket(remote->ss.ss_family, SOCK_DGRAM, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open a UDP socket: %s", strerror(errno));
        return false;
    }
    bool ok = connect(fd, (const struct sockaddr *)&remote->ss, remote->len) == 0;
    if (ok) {
        local->len = sizeof local->ss;
        ok = getsockname(fd, (struct sockaddr *)&local->ss, &local->len) == 0;
    }
    if (!ok) snprintf(err, errlen, "no route to the server: %s", strerror(errno));
    close(fd);
    if (ok) {
        if (local->ss.ss_family == AF_INET6) ((struct sockaddr_in6 *)&local->ss)->sin6_port = 0;
        else ((struct sockaddr_in *)&local->ss)->sin_port = 0;
    }
    return ok;
}

bool tune_tcp_socket(int fd) {
    static int warned;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    static const char cc[] = "cubic";
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, sizeof cc - 1) != 0) {
        if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
            diag("cannot set TCP congestion control cubic (%s); keeping the host default; run as "
                 "root or add it to net.ipv4.tcp_allowed_congestion_control", strerror(errno));
        return false;
    }
    return true;
}

int set_udp_buffers(int fd) {
    int want = UDP_BUFFER_BYTES;
    static const int opts[2][2] = {{SO_RCVBUFFORCE, SO_RCVBUF}, {SO_SNDBUFFORCE, SO_SNDBUF}};
    int got_min = -1;
    for (int i = 0; i < 2; i++) {
        if (setsockopt(fd, SOL_SOCKET, opts[i][0], &want, sizeof want) != 0)
            setsockopt(fd, SOL_SOCKET, opts[i][1], &want, sizeof want);
        int got = 0;
        socklen_t len = sizeof got;
        getsockopt(fd, SOL_SOCKET, opts[i][1], &got, &len);
        got /= 2; /* the kernel reports twice what it accounts as payload */
        if (got_min < 0 || got < got_min) got_min = got;
    }
    if (got_min < want)
        diag("UDP socket buffers are %d bytes, below the %d required (not privileged; raise "
             "net.core.rmem_max and wmem_max)", got_min, want);
    return got_min;
}
