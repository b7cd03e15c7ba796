/* Transport statistics of the client's connections over the window: the `sample` event's
 * optional `transport` object (docs/peer-protocol.md "Transport statistics"), as the Rust peer
 * computes it (crates/peer/src/transport/mod.rs).
 *
 * A reading is one connection at one moment: cumulative counters and gauges, each present or
 * not. The tracker (pure) turns the reading at START, the polls during the window and the
 * reading after the drain into the statistics: counters are end minus start per connection,
 * summed over connections (a connection new in the window counts from zero, a counter one
 * connection lacks is absent); the congestion window is summed over connections at each poll
 * (its minimum and mean over the polls, the end reading counting as a poll); RTTs are means over
 * connections at the end; TCP's congestion events are polled entries into loss recovery.
 *
 * The thin I/O around it: TCP_INFO of one socket (decoded from the bytes the kernel filled), a
 * registry of the client's TCP sockets, and a poller thread (grpc). The quic stack polls on its
 * own event loop (quic_client.c), because an ngtcp2 connection belongs to one thread. */
#ifndef RPCARENA_TRANSPORT_H
#define RPCARENA_TRANSPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

/* How often the gauges are polled during the window (the Rust peer's POLL_INTERVAL). */
#define TRANSPORT_POLL_NS (5ULL * 1000000ULL)
/* Connections a tracker follows; further ones are left out of the statistics. */
#define TRANSPORT_MAX_CONNS 64

/* The fields of a reading, in the order of docs/peer-protocol.md. */
typedef enum {
    TF_PACKETS_SENT = 0,
    TF_BYTES_SENT,
    TF_RETRANSMITTED,
    TF_LOST,
    TF_TIMEOUTS,
    TF_CONGESTION_EVENTS, /* cumulative, where the library counts them (QUIC) */
    TF_CWND,
    TF_SRTT,
    TF_MIN_RTT,
    TF_DELIVERY_RATE,
    TF_BUSY,
    TF_RWND_LIMITED,
    TF_SNDBUF_LIMITED,
    TF_DATAGRAMS_SENT,
    TF_SEND_CALLS,
    TF_COUNT
} tfield;

/* One connection at one moment. */
typedef struct {
    uint64_t id;            /* stable within a probe (registration order) */
    uint64_t v[TF_COUNT];   /* counters in their units: bytes, ns, bits/s */
    uint32_t has;           /* bit f: v[f] is given */
    int in_recovery;        /* TCP: 1 in TCP_CA_Recovery or TCP_CA_Loss, 0 not; -1: not TCP */
} treading;

static inline void treading_set(treading *r, tfield f, uint64_t value) {
    r->v[f] = value;
    r->has |= 1u << f;
}

/* The window's statistics. */
typedef struct {
    bool present;
    const char *transport; /* "tcp" or "quic" */
    uint64_t connections, polls;
    uint64_t v[TF_COUNT];
    uint32_t has;
    uint64_t cwnd_min, cwnd_mean; /* present when polls > 0 */
} tstats;

typedef struct {
    const char *transport;
    treading start[TRANSPORT_MAX_CONNS];
    size_t n_start;
    uint64_t polls, cwnd_min, cwnd_sum;
    struct {
        uint64_t id;
        bool was;
    } rec[TRANSPORT_MAX_CONNS];
    size_t n_rec;
    uint64_t recovery_entries;
} tracker_t;

/* Starts from the reading at START. */
void tracker_init(tracker_t *t, const char *transport, const treading *start, size_t n);
/* One poll during the window. */
void tracker_observe(tracker_t *t, const treading *r, size_t n);
/* The statistics from the reading after the drain (which also counts as a poll). */
void tracker_finish(tracker_t *t, const treading *end, size_t n, tstats *out);

/* Writes "transport":{...} into an open object (nothing when !s->present). */
void transport_json(json_t *j, const tstats *s);

/* ------------------------------------------------------------------------------ TCP_INFO */

/* Byte offsets in the kernel's struct tcp_info (include/uapi/linux/tcp.h, x86_64 and aarch64
 * alike; the Debian 12 header stops at tcpi_snd_wnd, Linux 6.7 added tcpi_total_rto). */
enum {
    TCPI_CA_STATE = 1,
    TCPI_SND_MSS = 16,
    TCPI_RTT = 68,
    TCPI_SND_CWND = 80,
    TCPI_TOTAL_RETRANS = 100,
    TCPI_SEGS_OUT = 136,
    TCPI_MIN_RTT = 148,
    TCPI_DELIVERY_RATE = 160,
    TCPI_BUSY_TIME = 168,
    TCPI_RWND_LIMITED = 176,
    TCPI_SNDBUF_LIMITED = 184,
    TCPI_BYTES_SENT = 200,
    TCPI_TOTAL_RTO = 240,
    TCPI_SIZE = 248,
};

/* Decodes the first `len` bytes of a struct tcp_info (what getsockopt filled): fields past
 * `len` are absent. False when even the base fields (through tcpi_segs_out) are missing. */
bool tcp_reading_decode(const uint8_t *info, size_t len, uint64_t id, treading *out);
/* getsockopt(TCP_INFO) of fd, decoded. */
bool tcp_reading_read(int fd, uint64_t id, treading *out);

/* The client's TCP sockets: duplicates registered as connections open (a duplicate reads the
 * same socket), closed by tcp_sockets_clear before the connections close. Thread-safe. */
void tcp_sockets_register(int fd);
size_t tcp_sockets_read(treading *out, size_t cap);
void tcp_sockets_clear(void);

/* ------------------------------------------------------------------------------ poller */

typedef size_t (*treader)(void *ctx, treading *out, size_t cap);

/* A thread that reads at start, every TRANSPORT_POLL_NS, and at the end. */
typedef struct {
    treader read;
    void *ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, started;
    tracker_t tracker;
    treading buf[TRANSPORT_MAX_CONNS];
} tpoller;

void tpoller_start(tpoller *p, const char *transport, treader read, void *ctx);
/* Stops polling, reads the end; out->present is false when there was no connection. */
void tpoller_finish(tpoller *p, tstats *out);

#endif
