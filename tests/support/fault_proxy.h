#pragma once
/// A TCP proxy between daemons and one redis-server, switched by the test at run time
/// (issue 9): the faults a network makes, per link. Transparent to the bytes (so TLS goes
/// through it unchanged); one proxy per daemon per node lets a test cut one holder off
/// from one node while the others see it.
///
///   pass      forward both ways
///   latency   forward both ways, each chunk delayed by N ms, order kept
///   blackhole connections stay open, nothing is forwarded (what is sent is dropped), no
///             RST: a hung host or a silent partition; new connections are accepted and
///             held the same way
///   reset     every connection is reset (RST), new ones are reset as soon as accepted
///
/// One thread, poll() over every socket; stopped and joined by the destructor.

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "util/unique_fd.h"

namespace redisgo::testing {

class FaultProxy {
 public:
  enum class Mode { kPass, kLatency, kBlackhole, kReset };

  /// Listens on 127.0.0.1 (a free port) and forwards to upstream_port on 127.0.0.1.
  explicit FaultProxy(int upstream_port);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  void pass() { set(Mode::kPass, std::chrono::milliseconds(0)); }
  void latency(std::chrono::milliseconds each_way) { set(Mode::kLatency, each_way); }
  void blackhole() { set(Mode::kBlackhole, std::chrono::milliseconds(0)); }
  void reset() { set(Mode::kReset, std::chrono::milliseconds(0)); }
  Mode mode() const;
  /// Connections accepted so far.
  int accepted() const { return accepted_.load(); }

 private:
  void set(Mode mode, std::chrono::milliseconds delay);
  void run();

  int upstream_port_;
  int port_ = 0;
  UniqueFd listen_;
  UniqueFd wake_;  // eventfd: mode changes and stop
  mutable std::mutex mu_;
  Mode mode_ = Mode::kPass;
  std::chrono::milliseconds delay_{0};
  bool stopping_ = false;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

}  // namespace redisgo::testing
