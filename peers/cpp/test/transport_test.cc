// Transport statistics: the tracker's differences, sums, means and polled recovery entries (the
// cases of the Rust peer's crates/peer/src/transport/mod.rs), the JSON object, the TCP_INFO layout
// against the system header, and a loopback socket read through the registry.
#include <gtest/gtest.h>

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "transport.h"

using namespace rpcarena;

namespace {

ConnReading tcp(uint64_t id, uint64_t sent, uint64_t retrans, uint64_t cwnd, bool recovering) {
  ConnReading r;
  r.id = id;
  r.packets_sent = sent;
  r.retransmitted = retrans;
  r.in_recovery = recovering;
  r.cwnd_bytes = cwnd;
  r.srtt_ns = 30000000;
  r.busy_ns = sent * 1000;
  return r;
}

ConnReading quic(uint64_t sent, uint64_t lost, uint64_t events, uint64_t cwnd) {
  ConnReading r;
  r.packets_sent = sent;
  r.lost = lost;
  r.congestion_events = events;
  r.cwnd_bytes = cwnd;
  r.srtt_ns = 31000000;
  r.datagrams_sent = sent;
  r.send_calls = sent / 2;
  return r;
}

TEST(Transport, CountersAreWindowDifferencesSummedOverConnections) {
  Tracker t("tcp", {tcp(0, 100, 1, 10000, false), tcp(1, 50, 0, 10000, false)});
  t.observe({tcp(0, 150, 1, 8000, false), tcp(1, 60, 0, 12000, false)});
  TransportStats s = t.finish({tcp(0, 300, 3, 14000, false), tcp(1, 80, 2, 14000, false)});
  EXPECT_EQ(s.transport, "tcp");
  EXPECT_EQ(s.connections, 2u);
  EXPECT_EQ(s.packets_sent, 230u);
  EXPECT_EQ(s.retransmitted, 4u);
  EXPECT_EQ(s.busy_ns, 230000u);
  EXPECT_EQ(s.polls, 2u);
  EXPECT_EQ(s.cwnd_bytes, 28000u);
  EXPECT_EQ(s.cwnd_min_bytes, 20000u);
  EXPECT_EQ(s.cwnd_mean_bytes, 24000u);
  EXPECT_EQ(s.srtt_ns, 30000000u);
  EXPECT_FALSE(s.lost) << "TCP reports no lost packets";
  EXPECT_FALSE(s.datagrams_sent);
}

TEST(Transport, TcpCongestionEventsAreEntriesIntoRecovery) {
  Tracker t("tcp", {tcp(0, 0, 0, 1, true)});
  // Already recovering at START: not an entry. Leaves, enters, stays, leaves, enters.
  for (bool recovering : {true, false, true, true, false, true}) t.observe({tcp(0, 0, 0, 1, recovering)});
  // A connection that appears during the window, recovering.
  t.observe({tcp(0, 0, 0, 1, true), tcp(7, 0, 0, 1, true)});
  TransportStats s = t.finish({tcp(0, 0, 0, 1, false), tcp(7, 0, 0, 1, false)});
  EXPECT_EQ(s.congestion_events, 3u);
}

TEST(Transport, QuicCongestionEventsComeFromTheLibrary) {
  Tracker t("quic", {quic(10, 0, 1, 12000)});
  TransportStats s = t.finish({quic(110, 2, 3, 30000)});
  EXPECT_EQ(s.packets_sent, 100u);
  EXPECT_EQ(s.lost, 2u);
  EXPECT_EQ(s.congestion_events, 2u);
  EXPECT_EQ(s.datagrams_sent, 100u);
  EXPECT_EQ(s.send_calls, 50u);
  EXPECT_FALSE(s.retransmitted);
  EXPECT_EQ(s.cwnd_min_bytes, 30000u);
  EXPECT_EQ(s.cwnd_bytes, 30000u);
}

TEST(Transport, ACounterOneConnectionLacksIsAbsent) {
  ConnReading b = tcp(1, 10, 0, 1, false);
  b.busy_ns.reset();
  Tracker t("tcp", {});
  TransportStats s = t.finish({tcp(0, 10, 0, 1, false), b});
  EXPECT_FALSE(s.busy_ns);
  EXPECT_EQ(s.packets_sent, 20u) << "connections new in the window count from zero";
  ConnReading start = tcp(0, 5, 0, 1, false);
  start.retransmitted.reset();
  Tracker u("tcp", {start});
  s = u.finish({tcp(0, 10, 0, 1, false)});
  EXPECT_FALSE(s.retransmitted) << "a counter the start reading lacks";
  EXPECT_EQ(s.packets_sent, 5u);
}

TEST(Transport, TheObjectHasDecimalStringsInOrder) {
  Tracker t("quic", {quic(10, 0, 1, 12000)});
  ConnReading end = quic(110, 2, 3, 30000);
  end.lost.reset();
  TransportStats s = t.finish({end});
  EXPECT_EQ(s.to_json().dump(),
            "{\"transport\":\"quic\",\"connections\":\"1\",\"polls\":\"1\",\"packets_sent\":\"100\","
            "\"congestion_events\":\"2\",\"cwnd_bytes\":\"30000\",\"cwnd_min_bytes\":\"30000\","
            "\"cwnd_mean_bytes\":\"30000\",\"srtt_ns\":\"31000000\",\"datagrams_sent\":\"100\","
            "\"send_calls\":\"50\"}");
}

TEST(Transport, TheLayoutIsTheKernels) {
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_ca_state), tcpi::kCaState);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_snd_mss), tcpi::kSndMss);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_rtt), tcpi::kRtt);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_snd_cwnd), tcpi::kSndCwnd);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_total_retrans), tcpi::kTotalRetrans);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_segs_out), tcpi::kSegsOut);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_min_rtt), tcpi::kMinRtt);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_delivery_rate), tcpi::kDeliveryRate);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_busy_time), tcpi::kBusyTime);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_rwnd_limited), tcpi::kRwndLimited);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_sndbuf_limited), tcpi::kSndbufLimited);
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_bytes_sent), tcpi::kBytesSent);
  // tcpi_snd_wnd (228) ends Debian 12's header; then rcv_wnd 232, rehash 236, total_rto 240.
  EXPECT_EQ(offsetof(struct tcp_info, tcpi_snd_wnd), 228u);
  EXPECT_EQ(tcpi::kTotalRto, 240u);
}

TEST(Transport, FieldsPastTheFilledLengthAreAbsent) {
  uint8_t info[tcpi::kSize] = {};
  info[tcpi::kCaState] = 3;  // TCP_CA_Recovery
  uint32_t mss = 1448, cwnd = 10, segs = 77, rtt = 30000;
  std::memcpy(info + tcpi::kSndMss, &mss, 4);
  std::memcpy(info + tcpi::kSndCwnd, &cwnd, 4);
  std::memcpy(info + tcpi::kSegsOut, &segs, 4);
  std::memcpy(info + tcpi::kRtt, &rtt, 4);
  uint64_t rate = 1000, sent = 5000;
  std::memcpy(info + tcpi::kDeliveryRate, &rate, 8);
  std::memcpy(info + tcpi::kBytesSent, &sent, 8);
  uint16_t rto = 2;
  std::memcpy(info + tcpi::kTotalRto, &rto, 2);
  auto r = tcp_reading(info, tcpi::kSize, 3);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 3u);
  EXPECT_EQ(r->in_recovery, true);
  EXPECT_EQ(r->cwnd_bytes, 14480u);
  EXPECT_EQ(r->packets_sent, 77u);
  EXPECT_EQ(r->srtt_ns, 30000000u);
  EXPECT_EQ(r->delivery_rate_bps, 8000u);
  EXPECT_EQ(r->bytes_sent, 5000u);
  EXPECT_EQ(r->timeouts, 2u);
  EXPECT_FALSE(r->lost);
  r = tcp_reading(info, 232, 3);  // a kernel before 6.7
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->timeouts);
  EXPECT_TRUE(r->bytes_sent);
  r = tcp_reading(info, 192, 3);  // before 4.19
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->bytes_sent);
  EXPECT_TRUE(r->busy_ns);
  EXPECT_FALSE(tcp_reading(info, 100, 3));
}

TEST(Transport, ALoopbackConnectionReportsWhatItSent) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(listen(ls, 1), 0);
  ASSERT_EQ(getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &sl), 0);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  int s = accept(ls, nullptr, nullptr);
  static uint8_t data[100000];
  size_t off = 0;
  while (off < sizeof data) {
    ssize_t n = write(c, data + off, sizeof data - off);
    ASSERT_GT(n, 0);
    off += static_cast<size_t>(n);
    for (ssize_t got = 0; got < n;) {
      ssize_t m = read(s, data, static_cast<size_t>(n - got));
      ASSERT_GT(m, 0);
      got += m;
    }
  }
  tcp_sockets::add(c);
  auto r = tcp_sockets::read();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_GT(*r[0].cwnd_bytes, 0u);
  EXPECT_GE(*r[0].packets_sent, 2u);
  EXPECT_EQ(r[0].in_recovery, false);
  if (r[0].bytes_sent) {
    EXPECT_GE(*r[0].bytes_sent, 100000u);
  }
  tcp_sockets::clear();
  EXPECT_TRUE(tcp_sockets::read().empty());
  EXPECT_EQ(write(c, "x", 1), 1) << "clear closed the duplicate, not the socket";
  close(c);
  close(s);
  close(ls);
}

TEST(Transport, ThePollerReadsStartPollsAndEnd) {
  std::atomic<uint64_t> sent{0};
  Poller p("quic", [&] {
    uint64_t n = sent.fetch_add(10) + 10;
    return std::vector<ConnReading>{quic(n, 0, 0, 1000)};
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto s = p.finish();
  ASSERT_TRUE(s);
  EXPECT_GE(*s->polls, 3u);  // ~6 polls in 30 ms, and the end
  EXPECT_EQ(*s->packets_sent, *s->polls * 10) << "every reading after the start adds 10";
  Poller none("tcp", [] { return std::vector<ConnReading>{}; });
  EXPECT_FALSE(none.finish()) << "no connection: no statistics";
}

}  // namespace
