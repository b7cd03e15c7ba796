/* Transport statistics: the tracker's differences, sums, means and polled recovery entries (the
 * cases of the Rust peer's crates/peer/src/transport/mod.rs), the JSON object, the TCP_INFO
 * layout against the system header and a loopback socket read through the registry. */
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "transport.h"

static treading tcp(uint64_t id, uint64_t sent, uint64_t retrans, uint64_t cwnd, bool recovering) {
    treading r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.in_recovery = recovering;
    treading_set(&r, TF_PACKETS_SENT, sent);
    treading_set(&r, TF_RETRANSMITTED, retrans);
    treading_set(&r, TF_CWND, cwnd);
    treading_set(&r, TF_SRTT, 30000000);
    treading_set(&r, TF_BUSY, sent * 1000);
    return r;
}

static bool is(const tstats *s, tfield f, uint64_t v) { return ((s->has >> f) & 1u) && s->v[f] == v; }
static bool absent(const tstats *s, tfield f) { return !((s->has >> f) & 1u); }

static tracker_t tr; /* large: not on the stack */

static void counters_are_window_differences_summed_over_connections(void) {
    treading start[] = {tcp(0, 100, 1, 10000, false), tcp(1, 50, 0, 10000, false)};
    treading poll[] = {tcp(0, 150, 1, 8000, false), tcp(1, 60, 0, 12000, false)};
    treading end[] = {tcp(0, 300, 3, 14000, false), tcp(1, 80, 2, 14000, false)};
    tracker_init(&tr, "tcp", start, 2);
    tracker_observe(&tr, poll, 2);
    tstats s;
    tracker_finish(&tr, end, 2, &s);
    CHECK(s.present && strcmp(s.transport, "tcp") == 0 && s.connections == 2 && s.polls == 2);
    CHECK(is(&s, TF_PACKETS_SENT, 230));
    CHECK(is(&s, TF_RETRANSMITTED, 4));
    CHECK(is(&s, TF_BUSY, 230000));
    CHECK(is(&s, TF_CWND, 28000) && s.cwnd_min == 20000 && s.cwnd_mean == 24000);
    CHECK(is(&s, TF_SRTT, 30000000));
    CHECK(absent(&s, TF_LOST) && absent(&s, TF_DATAGRAMS_SENT));
    CHECK(is(&s, TF_CONGESTION_EVENTS, 0));
}

static void tcp_congestion_events_are_entries_into_recovery(void) {
    treading r = tcp(0, 0, 0, 1, true);
    tracker_init(&tr, "tcp", &r, 1);
    /* already recovering at START: not an entry. Leaves, enters, stays, leaves, enters. */
    bool seq[] = {true, false, true, true, false, true};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        r = tcp(0, 0, 0, 1, seq[i]);
        tracker_observe(&tr, &r, 1);
    }
    /* a connection that appears during the window, recovering */
    treading two[] = {tcp(0, 0, 0, 1, true), tcp(7, 0, 0, 1, true)};
    tracker_observe(&tr, two, 2);
    treading end[] = {tcp(0, 0, 0, 1, false), tcp(7, 0, 0, 1, false)};
    tstats s;
    tracker_finish(&tr, end, 2, &s);
    CHECK(is(&s, TF_CONGESTION_EVENTS, 3));
}

static treading quic(uint64_t sent, uint64_t events, uint64_t cwnd) {
    treading r;
    memset(&r, 0, sizeof r);
    r.in_recovery = -1;
    treading_set(&r, TF_PACKETS_SENT, sent);
    treading_set(&r, TF_CONGESTION_EVENTS, events);
    treading_set(&r, TF_CWND, cwnd);
    treading_set(&r, TF_DATAGRAMS_SENT, sent);
    treading_set(&r, TF_SEND_CALLS, sent / 2);
    return r;
}

static void quic_congestion_events_come_from_the_library(void) {
    treading a = quic(10, 1, 12000), b = quic(110, 3, 30000);
    tracker_init(&tr, "quic", &a, 1);
    tstats s;
    tracker_finish(&tr, &b, 1, &s);
    CHECK(is(&s, TF_PACKETS_SENT, 100) && is(&s, TF_CONGESTION_EVENTS, 2));
    CHECK(is(&s, TF_DATAGRAMS_SENT, 100) && is(&s, TF_SEND_CALLS, 50));
    CHECK(absent(&s, TF_RETRANSMITTED) && absent(&s, TF_LOST));
    CHECK(s.polls == 1 && s.cwnd_min == 30000 && is(&s, TF_CWND, 30000));
}

static void a_counter_one_connection_lacks_is_absent(void) {
    treading end[] = {tcp(0, 10, 0, 1, false), tcp(1, 10, 0, 1, false)};
    end[1].has &= ~(1u << TF_BUSY);
    tracker_init(&tr, "tcp", NULL, 0);
    tstats s;
    tracker_finish(&tr, end, 2, &s);
    CHECK(absent(&s, TF_BUSY));
    CHECK(is(&s, TF_PACKETS_SENT, 20)); /* connections new in the window count from zero */
    /* a counter the start reading lacks is absent too */
    treading start = tcp(0, 5, 0, 1, false);
    start.has &= ~(1u << TF_RETRANSMITTED);
    tracker_init(&tr, "tcp", &start, 1);
    tracker_finish(&tr, end, 1, &s);
    CHECK(absent(&s, TF_RETRANSMITTED) && is(&s, TF_PACKETS_SENT, 5));
}

static void the_object_has_decimal_strings_in_order(void) {
    treading a = quic(10, 1, 12000), b = quic(110, 3, 30000);
    treading_set(&a, TF_SRTT, 1000);
    treading_set(&b, TF_SRTT, 31000000);
    tracker_init(&tr, "quic", &a, 1);
    tstats s;
    tracker_finish(&tr, &b, 1, &s);
    json_t j;
    json_init(&j);
    json_open(&j);
    transport_json(&j, &s);
    json_close(&j);
    const char *want = "{\"transport\":{\"transport\":\"quic\",\"connections\":\"1\",\"polls\":\"1\","
                       "\"packets_sent\":\"100\",\"congestion_events\":\"2\",\"cwnd_bytes\":\"30000\","
                       "\"cwnd_min_bytes\":\"30000\",\"cwnd_mean_bytes\":\"30000\","
                       "\"srtt_ns\":\"31000000\",\"datagrams_sent\":\"100\",\"send_calls\":\"50\"}}";
    CHECK(strcmp(json_text(&j), want) == 0);
    if (strcmp(json_text(&j), want) != 0) fprintf(stderr, "got %s\n", json_text(&j));
    json_free(&j);
    tstats none = {0};
    json_init(&j);
    json_open(&j);
    transport_json(&j, &none);
    json_close(&j);
    CHECK(strcmp(json_text(&j), "{}") == 0);
    json_free(&j);
}

static void the_layout_is_the_kernels(void) {
    CHECK(offsetof(struct tcp_info, tcpi_ca_state) == TCPI_CA_STATE);
    CHECK(offsetof(struct tcp_info, tcpi_snd_mss) == TCPI_SND_MSS);
    CHECK(offsetof(struct tcp_info, tcpi_rtt) == TCPI_RTT);
    CHECK(offsetof(struct tcp_info, tcpi_snd_cwnd) == TCPI_SND_CWND);
    CHECK(offsetof(struct tcp_info, tcpi_total_retrans) == TCPI_TOTAL_RETRANS);
    CHECK(offsetof(struct tcp_info, tcpi_segs_out) == TCPI_SEGS_OUT);
    CHECK(offsetof(struct tcp_info, tcpi_min_rtt) == TCPI_MIN_RTT);
    CHECK(offsetof(struct tcp_info, tcpi_delivery_rate) == TCPI_DELIVERY_RATE);
    CHECK(offsetof(struct tcp_info, tcpi_busy_time) == TCPI_BUSY_TIME);
    CHECK(offsetof(struct tcp_info, tcpi_rwnd_limited) == TCPI_RWND_LIMITED);
    CHECK(offsetof(struct tcp_info, tcpi_sndbuf_limited) == TCPI_SNDBUF_LIMITED);
    CHECK(offsetof(struct tcp_info, tcpi_bytes_sent) == TCPI_BYTES_SENT);
    /* tcpi_snd_wnd (228) is the last field of Debian 12's header; then rcv_wnd 232, rehash 236,
     * total_rto 240 (u16), total_rto_recoveries 242, total_rto_time 244 */
    CHECK(offsetof(struct tcp_info, tcpi_snd_wnd) == 228 && TCPI_TOTAL_RTO == 240);
}

static void fields_past_the_filled_length_are_absent(void) {
    uint8_t info[TCPI_SIZE];
    memset(info, 0, sizeof info);
    info[TCPI_CA_STATE] = 4; /* TCP_CA_Loss */
    uint32_t mss = 1448, cwnd = 10, segs = 77, rtt = 30000;
    memcpy(info + TCPI_SND_MSS, &mss, 4);
    memcpy(info + TCPI_SND_CWND, &cwnd, 4);
    memcpy(info + TCPI_SEGS_OUT, &segs, 4);
    memcpy(info + TCPI_RTT, &rtt, 4);
    uint64_t rate = 1000, sent = 5000;
    memcpy(info + TCPI_DELIVERY_RATE, &rate, 8);
    memcpy(info + TCPI_BYTES_SENT, &sent, 8);
    uint16_t rto = 2;
    memcpy(info + TCPI_TOTAL_RTO, &rto, 2);
    treading r;
    CHECK(tcp_reading_decode(info, TCPI_SIZE, 3, &r));
    CHECK(r.id == 3 && r.in_recovery == 1 && r.v[TF_CWND] == 14480 && r.v[TF_PACKETS_SENT] == 77);
    CHECK(r.v[TF_SRTT] == 30000000 && r.v[TF_DELIVERY_RATE] == 8000 && r.v[TF_BYTES_SENT] == 5000);
    CHECK(((r.has >> TF_TIMEOUTS) & 1u) && r.v[TF_TIMEOUTS] == 2);
    CHECK(!((r.has >> TF_LOST) & 1u) && !((r.has >> TF_DATAGRAMS_SENT) & 1u));
    CHECK(tcp_reading_decode(info, 232, 3, &r)); /* a kernel before 6.7 */
    CHECK(!((r.has >> TF_TIMEOUTS) & 1u) && ((r.has >> TF_BYTES_SENT) & 1u));
    CHECK(tcp_reading_decode(info, 192, 3, &r)); /* before 4.19 */
    CHECK(!((r.has >> TF_BYTES_SENT) & 1u) && ((r.has >> TF_BUSY) & 1u));
    CHECK(!tcp_reading_decode(info, 100, 3, &r));
}

static void a_loopback_connection_reports_what_it_sent(void) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    CHECK(bind(ls, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(ls, 1) == 0);
    CHECK(getsockname(ls, (struct sockaddr *)&sa, &sl) == 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *)&sa, sizeof sa) == 0);
    int s = accept(ls, NULL, NULL);
    static uint8_t data[100000];
    size_t off = 0;
    while (off < sizeof data) {
        ssize_t n = write(c, data + off, sizeof data - off);
        if (n <= 0) break;
        off += (size_t)n;
        for (ssize_t got = 0; got < n;) {
            ssize_t m = read(s, data, (size_t)(n - got) < sizeof data ? (size_t)(n - got) : sizeof data);
            if (m <= 0) break;
            got += m;
        }
    }
    tcp_sockets_register(c);
    treading r[4];
    CHECK(tcp_sockets_read(r, 4) == 1);
    CHECK(r[0].v[TF_CWND] > 0 && r[0].v[TF_PACKETS_SENT] >= 2 && r[0].in_recovery == 0);
    CHECK(!((r[0].has >> TF_BYTES_SENT) & 1u) || r[0].v[TF_BYTES_SENT] >= 100000);
    tcp_sockets_clear();
    CHECK(tcp_sockets_read(r, 4) == 0);
    CHECK(write(c, "x", 1) == 1); /* the clear closed the duplicate, not the socket */
    close(c);
    close(s);
    close(ls);
}

int main(void) {
    RUN(counters_are_window_differences_summed_over_connections);
    RUN(tcp_congestion_events_are_entries_into_recovery);
    RUN(quic_congestion_events_come_from_the_library);
    RUN(a_counter_one_connection_lacks_is_absent);
    RUN(the_object_has_decimal_strings_in_order);
    RUN(the_layout_is_the_kernels);
    RUN(fields_past_the_filled_length_are_absent);
    RUN(a_loopback_connection_reports_what_it_sent);
    DONE();
}
