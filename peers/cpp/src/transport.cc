#include "transport.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace rpcarena {

using Field = std::optional<uint64_t> ConnReading::*;

Tracker::Tracker(std::string transport, std::vector<ConnReading> start)
    : transport_(std::move(transport)), start_(std::move(start)) {
  for (const ConnReading& c : start_) recovering_.emplace_back(c.id, c.in_recovery.value_or(false));
}

void Tracker::observe(const std::vector<ConnReading>& reading) {
  uint64_t cwnd = 0;
  for (const ConnReading& c : reading) cwnd += c.cwnd_bytes.value_or(0);
  ++polls_;
  cwnd_sum_ += cwnd;
  cwnd_min_ = cwnd_min_ ? std::min(*cwnd_min_, cwnd) : cwnd;
  for (const ConnReading& c : reading) {
    if (!c.in_recovery) continue;
    bool now = *c.in_recovery;
    auto it = std::find_if(recovering_.begin(), recovering_.end(),
                           [&](const auto& r) { return r.first == c.id; });
    if (it != recovering_.end()) {
      if (now && !it->second) ++recovery_entries_;
      it->second = now;
    } else {
      recovering_.emplace_back(c.id, now);
      recovery_entries_ += now ? 1 : 0;
    }
  }
}

TransportStats Tracker::finish(const std::vector<ConnReading>& end) {
  observe(end);
  auto start = [&](uint64_t id) -> const ConnReading* {
    for (const ConnReading& c : start_) {
      if (c.id == id) return &c;
    }
    return nullptr;
  };
  // End minus start per connection, summed; absent if any connection lacks it.
  auto delta = [&](Field f) -> std::optional<uint64_t> {
    uint64_t sum = 0;
    for (const ConnReading& c : end) {
      const ConnReading* s = start(c.id);
      if (!(c.*f) || (s && !(s->*f))) return std::nullopt;
      uint64_t before = s ? *(s->*f) : 0;
      sum += *(c.*f) > before ? *(c.*f) - before : 0;
    }
    return sum;
  };
  auto sum = [&](Field f) -> std::optional<uint64_t> {
    uint64_t total = 0;
    for (const ConnReading& c : end) {
      if (!(c.*f)) return std::nullopt;
      total += *(c.*f);
    }
    return total;
  };
  auto mean = [&](Field f) -> std::optional<uint64_t> {
    auto s = sum(f);
    if (!s || end.empty()) return std::nullopt;
    return *s / end.size();
  };
  bool tcp = !end.empty() && std::all_of(end.begin(), end.end(),
                                         [](const ConnReading& c) { return c.in_recovery.has_value(); });
  TransportStats s;
  s.transport = transport_;
  s.connections = end.size();
  s.polls = polls_;
  s.packets_sent = delta(&ConnReading::packets_sent);
  s.bytes_sent = delta(&ConnReading::bytes_sent);
  s.retransmitted = delta(&ConnReading::retransmitted);
  s.lost = delta(&ConnReading::lost);
  s.timeouts = delta(&ConnReading::timeouts);
  s.congestion_events = tcp ? std::optional<uint64_t>(recovery_entries_) : delta(&ConnReading::congestion_events);
  s.cwnd_bytes = sum(&ConnReading::cwnd_bytes);
  s.cwnd_min_bytes = cwnd_min_;
  if (polls_ > 0) s.cwnd_mean_bytes = static_cast<uint64_t>(cwnd_sum_ / polls_);
  s.srtt_ns = mean(&ConnReading::srtt_ns);
  s.min_rtt_ns = mean(&ConnReading::min_rtt_ns);
  s.delivery_rate_bps = sum(&ConnReading::delivery_rate_bps);
  s.busy_ns = delta(&ConnReading::busy_ns);
  s.rwnd_limited_ns = delta(&ConnReading::rwnd_limited_ns);
  s.sndbuf_limited_ns = delta(&ConnReading::sndbuf_limited_ns);
  s.datagrams_sent = delta(&ConnReading::datagrams_sent);
  s.send_calls = delta(&ConnReading::send_calls);
  return s;
}

Json TransportStats::to_json() const {
  Json j;
  j["transport"] = transport;
  j["connections"] = counter(connections);
  const std::pair<const char*, const std::optional<uint64_t>*> fields[] = {
      {"polls", &polls},
      {"packets_sent", &packets_sent},
      {"bytes_sent", &bytes_sent},
      {"retransmitted", &retransmitted},
      {"lost", &lost},
      {"timeouts", &timeouts},
      {"congestion_events", &congestion_events},
      {"cwnd_bytes", &cwnd_bytes},
      {"cwnd_min_bytes", &cwnd_min_bytes},
      {"cwnd_mean_bytes", &cwnd_mean_bytes},
      {"srtt_ns", &srtt_ns},
      {"min_rtt_ns", &min_rtt_ns},
      {"delivery_rate_bps", &delivery_rate_bps},
      {"busy_ns", &busy_ns},
      {"rwnd_limited_ns", &rwnd_limited_ns},
      {"sndbuf_limited_ns", &sndbuf_limited_ns},
      {"datagrams_sent", &datagrams_sent},
      {"send_calls", &send_calls},
  };
  for (const auto& [name, value] : fields) {
    if (*value) j[name] = counter(**value);
  }
  return j;
}

// --- TCP_INFO ---------------------------------------------------------------------------------

namespace {
template <typename T>
uint64_t get(const uint8_t* info, size_t off) {
  T v;
  std::memcpy(&v, info + off, sizeof v);
  return v;
}
}  // namespace

std::optional<ConnReading> tcp_reading(const uint8_t* info, size_t len, uint64_t id) {
  if (len < tcpi::kSegsOut + 4) return std::nullopt;
  auto filled = [len](size_t off, size_t width) { return off + width <= len; };
  auto us = [](uint64_t v) { return v * 1000; };
  ConnReading r;
  r.id = id;
  uint8_t ca = info[tcpi::kCaState];
  r.in_recovery = ca == 3 /* TCP_CA_Recovery */ || ca == 4 /* TCP_CA_Loss */;
  r.packets_sent = get<uint32_t>(info, tcpi::kSegsOut);
  r.retransmitted = get<uint32_t>(info, tcpi::kTotalRetrans);
  r.cwnd_bytes = get<uint32_t>(info, tcpi::kSndCwnd) * get<uint32_t>(info, tcpi::kSndMss);
  r.srtt_ns = us(get<uint32_t>(info, tcpi::kRtt));
  if (filled(tcpi::kMinRtt, 4)) r.min_rtt_ns = us(get<uint32_t>(info, tcpi::kMinRtt));
  if (filled(tcpi::kDeliveryRate, 8)) r.delivery_rate_bps = get<uint64_t>(info, tcpi::kDeliveryRate) * 8;
  if (filled(tcpi::kSndbufLimited, 8)) {
    r.busy_ns = us(get<uint64_t>(info, tcpi::kBusyTime));
    r.rwnd_limited_ns = us(get<uint64_t>(info, tcpi::kRwndLimited));
    r.sndbuf_limited_ns = us(get<uint64_t>(info, tcpi::kSndbufLimited));
  }
  if (filled(tcpi::kBytesSent, 8)) r.bytes_sent = get<uint64_t>(info, tcpi::kBytesSent);
  if (filled(tcpi::kTotalRto, 2)) r.timeouts = get<uint16_t>(info, tcpi::kTotalRto);
  return r;
}

std::optional<ConnReading> tcp_reading(int fd, uint64_t id) {
  uint8_t info[tcpi::kSize] = {};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &len) != 0) return std::nullopt;
  return tcp_reading(info, len, id);
}

namespace tcp_sockets {
namespace {
std::mutex m;
std::vector<int>& fds() {
  static auto* v = new std::vector<int>();  // never destroyed: the process may exit at any time
  return *v;
}
}  // namespace

void add(int fd) {
  int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) {
    diag(std::string("no TCP statistics for a connection: ") + std::strerror(errno));
    return;
  }
  std::lock_guard<std::mutex> lock(m);
  fds().push_back(dup);
}

std::vector<ConnReading> read() {
  std::lock_guard<std::mutex> lock(m);
  std::vector<ConnReading> out;
  for (size_t i = 0; i < fds().size(); ++i) {
    if (auto r = tcp_reading(fds()[i], i)) out.push_back(*r);
  }
  return out;
}

void clear() {
  std::lock_guard<std::mutex> lock(m);
  for (int fd : fds()) ::close(fd);
  fds().clear();
}
}  // namespace tcp_sockets

// --- The poller ---------------------------------------------------------------------------------

Poller::Poller(std::string transport, Reader read)
    : read_(std::move(read)), tracker_(std::move(transport), read_()) {
  thread_ = std::thread([this] {
    auto next = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(m_);
    while (!stop_) {
      next += std::chrono::nanoseconds(kTransportPollNs);
      if (cv_.wait_until(lock, next, [this] { return stop_; })) break;
      lock.unlock();
      auto reading = read_();
      lock.lock();
      tracker_.observe(reading);
    }
  });
}

Poller::~Poller() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<TransportStats> Poller::finish() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  auto end = read_();
  if (end.empty()) return std::nullopt;
  return tracker_.finish(end);
}

}  // namespace rpcarena
