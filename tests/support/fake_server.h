#pragma once
/// A TCP server on 127.0.0.1 that is not Redis, for faults a real redis-server will not
/// produce: it accepts connections and then answers as its handler says — never (a
/// "silent" node that accepts TCP and never answers), late, with garbage, with wrong
/// reply types, or by closing. One thread; stopped and joined by the destructor.

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "util/unique_fd.h"

namespace redisgo::testing {

class FakeServer {
 public:
  /// Given the bytes received on a connection since the last call, returns what to send
  /// back ("" = nothing). Runs on the server thread.
  using Handler = std::function<std::string(const std::string& received)>;
  /// Null handler: silent (accept, read, never write).
  explicit FakeServer(Handler handler = nullptr, std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  /// Connections accepted so far.
  int connections() const { return accepted_.load(); }
  /// Bytes received so far over all connections.
  std::string received() const;
  /// Closes every open connection (the peer sees EOF).
  void drop_all();

 private:
  void run();
  Handler handler_;
  std::chrono::milliseconds delay_;
  UniqueFd listen_;
  UniqueFd stop_;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::atomic<bool> drop_{false};
  mutable std::mutex mu_;
  std::string received_;
  std::thread thread_;
};

/// A RESP command of `argv` as a client would send it (for handlers that match input).
std::string resp_command(const std::vector<std::string>& argv);

/// A handler that splits what it receives into commands (RESP arrays of bulk strings,
/// also across chunks) and answers each with `answer(argv)` (RESP bytes). Shared state:
/// use it for one connection at a time.
FakeServer::Handler command_handler(std::function<std::string(const std::vector<std::string>&)> answer);

}  // namespace redisgo::testing
