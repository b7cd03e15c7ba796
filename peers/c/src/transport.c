#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* ------------------------------------------------------------------------------ tracker */

typedef enum { KIND_COUNTER, KIND_SUM, KIND_MEAN } tkind;

static const struct {
    const char *name;
    tkind kind;
} FIELDS[TF_COUNT] = {
    [TF_PACKETS_SENT] = {"packets_sent", KIND_COUNTER},
    [TF_BYTES_SENT] = {"bytes_sent", KIND_COUNTER},
    [TF_RETRANSMITTED] = {"retransmitted", KIND_COUNTER},
    [TF_LOST] = {"lost", KIND_COUNTER},
    [TF_TIMEOUTS] = {"timeouts", KIND_COUNTER},
    [TF_CONGESTION_EVENTS] = {"congestion_events", KIND_COUNTER},
    [TF_CWND] = {"cwnd_bytes", KIND_SUM},
    [TF_SRTT] = {"srtt_ns", KIND_MEAN},
    [TF_MIN_RTT] = {"min_rtt_ns", KIND_MEAN},
    [TF_DELIVERY_RATE] = {"delivery_rate_bps", KIND_SUM},
    [TF_BUSY] = {"busy_ns", KIND_COUNTER},
    [TF_RWND_LIMITED] = {"rwnd_limited_ns", KIND_COUNTER},
    [TF_SNDBUF_LIMITED] = {"sndbuf_limited_ns", KIND_COUNTER},
    [TF_DATAGRAMS_SENT] = {"datagrams_sent", KIND_COUNTER},
    [TF_SEND_CALLS] = {"send_calls", KIND_COUNTER},
};

static bool has(const treading *r, tfield f) { return (r->has >> f) & 1u; }

void tracker_init(tracker_t *t, const char *transport, const treading *start, size_t n) {
    memset(t, 0, sizeof *t);
    t->transport = transport;
    if (n > TRANSPORT_MAX_CONNS) n = TRANSPORT_MAX_CONNS;
    memcpy(t->start, start, n * sizeof *start);
    t->n_start = n;
    for (size_t i = 0; i < n; i++) {
        t->rec[i].id = start[i].id;
        t->rec[i].was = start[i].in_recovery > 0;
    }
    t->n_rec = n;
}

void tracker_observe(tracker_t *t, const treading *r, size_t n) {
    if (n > TRANSPORT_MAX_CONNS) n = TRANSPORT_MAX_CONNS;
    uint64_t cwnd = 0;
    for (size_t i = 0; i < n; i++) cwnd += r[i].v[TF_CWND];
    t->cwnd_min = t->polls == 0 || cwnd < t->cwnd_min ? cwnd : t->cwnd_min;
    t->polls++;
    t->cwnd_sum += cwnd;
    for (size_t i = 0; i < n; i++) {
        if (r[i].in_recovery < 0) continue;
        bool now = r[i].in_recovery > 0;
        size_t k = 0;
        while (k < t->n_rec && t->rec[k].id != r[i].id) k++;
        if (k < t->n_rec) {
            if (now && !t->rec[k].was) t->recovery_entries++;
            t->rec[k].was = now;
        } else if (t->n_rec < TRANSPORT_MAX_CONNS) {
            t->rec[t->n_rec].id = r[i].id;
            t->rec[t->n_rec].was = now;
            t->n_rec++;
            t->recovery_entries += now;
        }
    }
}

void tracker_finish(tracker_t *t, const treading *end, size_t n, tstats *out) {
    tracker_observe(t, end, n);
    if (n > TRANSPORT_MAX_CONNS) n = TRANSPORT_MAX_CONNS;
    memset(out, 0, sizeof *out);
    out->present = true;
    out->transport = t->transport;
    out->connections = n;
    out->polls = t->polls;
    for (int f = 0; f < TF_COUNT; f++) {
        bool all = true;
        uint64_t total = 0;
        for (size_t i = 0; i < n && all; i++) {
            if (!has(&end[i], (tfield)f)) {
                all = false;
                break;
            }
            uint64_t before = 0;
            if (FIELDS[f].kind == KIND_COUNTER) {
                const treading *s = NULL;
                for (size_t k = 0; k < t->n_start && !s; k++)
                    if (t->start[k].id == end[i].id) s = &t->start[k];
                if (s && !has(s, (tfield)f)) all = false;
                else if (s) before = s->v[f];
            }
            uint64_t now = end[i].v[f];
            total += now > before ? now - before : 0;
        }
        if (!all) continue;
        if (FIELDS[f].kind == KIND_MEAN) {
            if (n == 0) continue;
            total /= n;
        }
        out->v[f] = total;
        out->has |= 1u << f;
    }
    bool tcp = n > 0;
    for (size_t i = 0; i < n; i++) tcp = tcp && end[i].in_recovery >= 0;
    if (tcp) {
        out->v[TF_CONGESTION_EVENTS] = t->recovery_entries;
        out->has |= 1u << TF_CONGESTION_EVENTS;
    }
    out->cwnd_min = t->cwnd_min;
    out->cwnd_mean = t->polls ? t->cwnd_sum / t->polls : 0;
}

void transport_json(json_t *j, const tstats *s) {
    if (!s || !s->present) return;
    json_open_obj(j, "transport");
    json_str(j, "transport", s->transport);
    json_counter(j, "connections", s->connections);
    json_counter(j, "polls", s->polls);
    for (int f = 0; f < TF_COUNT; f++) {
        if ((s->has >> f) & 1u) json_counter(j, FIELDS[f].name, s->v[f]);
        if (f == TF_CWND && s->polls > 0) {
            json_counter(j, "cwnd_min_bytes", s->cwnd_min);
            json_counter(j, "cwnd_mean_bytes", s->cwnd_mean);
        }
    }
    json_close(j);
}

/* ------------------------------------------------------------------------------ TCP_INFO */

static uint64_t get(const uint8_t *info, size_t off, size_t width) {
    if (width == 1) return info[off];
    if (width == 2) {
        uint16_t v;
        memcpy(&v, info + off, 2);
        return v;
    }
    if (width == 4) {
        uint32_t v;
        memcpy(&v, info + off, 4);
        return v;
    }
    uint64_t v;
    memcpy(&v, info + off, 8);
    return v;
}

bool tcp_reading_decode(const uint8_t *info, size_t len, uint64_t id, treading *out) {
    memset(out, 0, sizeof *out);
    out->id = id;
    if (len < TCPI_SEGS_OUT + 4) return false;
    uint64_t ca = get(info, TCPI_CA_STATE, 1);
    out->in_recovery = ca == 3 /* TCP_CA_Recovery */ || ca == 4 /* TCP_CA_Loss */;
    treading_set(out, TF_PACKETS_SENT, get(info, TCPI_SEGS_OUT, 4));
    treading_set(out, TF_RETRANSMITTED, get(info, TCPI_TOTAL_RETRANS, 4));
    treading_set(out, TF_CWND, get(info, TCPI_SND_CWND, 4) * get(info, TCPI_SND_MSS, 4));
    treading_set(out, TF_SRTT, get(info, TCPI_RTT, 4) * 1000);
    if (len >= TCPI_MIN_RTT + 4) treading_set(out, TF_MIN_RTT, get(info, TCPI_MIN_RTT, 4) * 1000);
    if (len >= TCPI_DELIVERY_RATE + 8)
        treading_set(out, TF_DELIVERY_RATE, get(info, TCPI_DELIVERY_RATE, 8) * 8);
    if (len >= TCPI_SNDBUF_LIMITED + 8) {
        treading_set(out, TF_BUSY, get(info, TCPI_BUSY_TIME, 8) * 1000);
        treading_set(out, TF_RWND_LIMITED, get(info, TCPI_RWND_LIMITED, 8) * 1000);
        treading_set(out, TF_SNDBUF_LIMITED, get(info, TCPI_SNDBUF_LIMITED, 8) * 1000);
    }
    if (len >= TCPI_BYTES_SENT + 8) treading_set(out, TF_BYTES_SENT, get(info, TCPI_BYTES_SENT, 8));
    if (len >= TCPI_TOTAL_RTO + 2) treading_set(out, TF_TIMEOUTS, get(info, TCPI_TOTAL_RTO, 2));
    return true;
}

bool tcp_reading_read(int fd, uint64_t id, treading *out) {
    uint8_t info[TCPI_SIZE];
    memset(info, 0, sizeof info);
    socklen_t len = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &len) != 0) return false;
    return tcp_reading_decode(info, len, id, out);
}

static pthread_mutex_t sockets_mu = PTHREAD_MUTEX_INITIALIZER;
static int sockets[TRANSPORT_MAX_CONNS];
static size_t n_sockets;

void tcp_sockets_register(int fd) {
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) {
        diag("no TCP statistics for a connection: %s", strerror(errno));
        return;
    }
    pthread_mutex_lock(&sockets_mu);
    if (n_sockets < TRANSPORT_MAX_CONNS) {
        sockets[n_sockets++] = dup;
        dup = -1;
    }
    pthread_mutex_unlock(&sockets_mu);
    if (dup >= 0) {
        diag("no TCP statistics for more than %d connections", TRANSPORT_MAX_CONNS);
        close(dup);
    }
}

size_t tcp_sockets_read(treading *out, size_t cap) {
    size_t n = 0;
    pthread_mutex_lock(&sockets_mu);
    for (size_t i = 0; i < n_sockets && n < cap; i++)
        if (tcp_reading_read(sockets[i], i, &out[n])) n++;
    pthread_mutex_unlock(&sockets_mu);
    return n;
}

void tcp_sockets_clear(void) {
    pthread_mutex_lock(&sockets_mu);
    for (size_t i = 0; i < n_sockets; i++) close(sockets[i]);
    n_sockets = 0;
    pthread_mutex_unlock(&sockets_mu);
}

/* ------------------------------------------------------------------------------ poller */

static void *poller_main(void *arg) {
    tpoller *p = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        next.tv_nsec += (long)TRANSPORT_POLL_NS;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        /* the condition variable waits on CLOCK_MONOTONIC (tpoller_start sets it) */
        while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &next) != ETIMEDOUT) {
        }
        if (p->stop) break;
        size_t n = p->read(p->ctx, p->buf, TRANSPORT_MAX_CONNS);
        tracker_observe(&p->tracker, p->buf, n);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void tpoller_start(tpoller *p, const char *transport, treader read, void *ctx) {
    p->read = read;
    p->ctx = ctx;
    p->stop = false;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    size_t n = read(ctx, p->buf, TRANSPORT_MAX_CONNS);
    tracker_init(&p->tracker, transport, p->buf, n);
    p->started = pthread_create(&p->thread, NULL, poller_main, p) == 0;
    if (!p->started) diag("no transport statistics: cannot start the poller thread");
}

void tpoller_finish(tpoller *p, tstats *out) {
    memset(out, 0, sizeof *out);
    if (!p->started) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    p->started = false;
    size_t n = p->read(p->ctx, p->buf, TRANSPORT_MAX_CONNS);
    if (n > 0) tracker_finish(&p->tracker, p->buf, n, out);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
}
