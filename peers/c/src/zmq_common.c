#include "zmq_common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void *zmq_router(void *ctx, bool ipv6, const char *routing_id, char *err, size_t errlen) {
    void *s = zmq_socket(ctx, ZMQ_ROUTER);
    if (!s) {
        snprintf(err, errlen, "zmq_socket(ROUTER): %s", zmq_strerror(errno));
        return NULL;
    }
    int one = 1, hwm = ZMQ_HWM, linger = 0, v6 = ipv6 ? 1 : 0;
    bool ok = zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &one, sizeof one) == 0 &&
              zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm) == 0 &&
              zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm) == 0 &&
              zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger) == 0 &&
              zmq_setsockopt(s, ZMQ_IPV6, &v6, sizeof v6) == 0 &&
              (!routing_id || zmq_setsockopt(s, ZMQ_ROUTING_ID, routing_id, strlen(routing_id)) == 0);
    if (!ok) {
        snprintf(err, errlen, "zmq_setsockopt: %s", zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    return s;
}

void zmq_endpoint(const char *address, char *out, size_t outlen) {
    snprintf(out, outlen, "tcp://%s", address);
}

bool zmq_in_recv(void *sock, zmq_in *in) {
    in->kept = in->total = 0;
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, in->total == 0 ? ZMQ_DONTWAIT : 0) < 0) {
            int e = errno;
            zmq_msg_close(&m);
            zmq_in_close(in);
            errno = e;
            return false; /* a message's later frames never fail: it is delivered whole */
        }
        bool more = zmq_msg_more(&m);
        if (in->kept < ZMQ_MAX_FRAMES) in->msgs[in->kept++] = m;
        else zmq_msg_close(&m);
        in->total++;
        if (!more) return true;
    }
}

void zmq_in_close(zmq_in *in) {
    for (size_t i = 0; i < in->kept; i++) zmq_msg_close(&in->msgs[i]);
    in->kept = 0;
}

size_t zmq_in_frames(zmq_in *in, zframe *out) {
    size_t n = 0;
    for (size_t i = 1; i < in->kept; i++, n++) {
        out[n].data = zmq_msg_data(&in->msgs[i]);
        out[n].len = zmq_msg_size(&in->msgs[i]);
    }
    return n;
}

int zmq_send_frames(void *sock, const zframe *frames, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int flags = ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0);
        if (zmq_send(sock, frames[i].data, frames[i].len, flags) < 0) return errno;
    }
    return 0;
}

const char *zmq_version_text(void) {
    static char text[32];
    int major, minor, patch;
    zmq_version(&major, &minor, &patch);
    snprintf(text, sizeof text, "%d.%d.%d", major, minor, patch);
    return text;
}
