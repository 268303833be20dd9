#pragma once
/// A real redis-server for integration tests : started on a free
/// loopback port in its own temp dir with no persistence, stopped by pid. Faults:
/// pause()/resume() send SIGSTOP/SIGCONT, kill() is SIGKILL, restart() comes back on the
/// same port with an empty dataset.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace redisgo::testing {

/// PEM files for TLS tests, made with openssl(1) (make_test_certificates).
struct TlsFiles {
  std::string ca;             ///< the CA that signed the server and client certificates
  std::string server_cert;    ///< CN/SAN localhost and 127.0.0.1
  std::string server_key;
  std::string client_cert;    ///< signed by `ca` (for tls-auth-clients)
  std::string client_key;
  std::string other_ca;       ///< an unrelated CA: verifying against it must fail
  std::string garbage;        ///< a file that holds no PEM at all
};
/// Makes the files once per test process (EC P-256, valid 30 days) and returns them.
const TlsFiles& test_certificates();

struct RedisServerOptions {
  std::string password;            ///< requirepass; empty = none
  /// Extra ACL users, each a full "user NAME on >pass ~* &* +@all" line for the config.
  std::vector<std::string> acl_users;
  /// Serve TLS only (port() is the tls-port; the plain port is off) with these files.
  const TlsFiles* tls = nullptr;
  bool tls_auth_clients = true;    ///< require a client certificate (with `tls`)
  /// More redis.conf lines (replicaof, cluster-enabled, ...).
  std::vector<std::string> extra_config;
  /// Cluster: the bus port (port + 10000) must be free and below 65536 too.
  bool cluster_bus = false;
  /// Run as redis-sentinel (`sentinel` lines go in extra_config; the config must be writable).
  bool sentinel = false;
  /// The server to run, as an argv prefix (the config file follows); empty: the host's
  /// redis-server. redis_server_with_waitaof() gives one of Redis >= 7.2.
  std::vector<std::string> program;
};

/// A redis-server that has WAITAOF (Redis >= 7.2): the host's when it is that recent, else
/// Debian 13's Redis 8 in /var/cache/redisgo-task/trixie run through that root's own dynamic
/// loader (scripts/setup; no chroot needed). Empty when there is none: the tests of once_per's
/// AOF branch then skip, saying so. `version` (if given) receives its version.
std::vector<std::string> redis_server_with_waitaof(std::string* version = nullptr);

/// Options with requirepass `password`.
RedisServerOptions with_password(std::string password);
/// Options with one extra ACL user line.
RedisServerOptions with_acl_user(std::string line);

class RedisServer {
 public:
  explicit RedisServer(RedisServerOptions options = {});
  ~RedisServer();  ///< stops the server (SIGKILL if needed) and removes its dir
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string unix_socket() const { return dir_ + "/redis.sock"; }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  /// Sends SIGTERM and waits (bounded) for exit; the data is lost (no persistence).
  void stop();
  /// SIGKILL and reap.
  void kill();
  /// Starts again on the same port (empty). Fails the test if it cannot.
  void start();
  void restart() { stop(); start(); }
  void pause();   ///< SIGSTOP
  void resume();  ///< SIGCONT

  /// Runs a command through redis-cli (tests' own view of the server, independent of the
  /// code under test); returns its trimmed stdout.
  std::string cli(const std::vector<std::string>& args) const;

 private:
  void launch();
  RedisServerOptions options_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

/// A free TCP port on 127.0.0.1 (bound then released; callers retry on collision).
int free_port();

/// Path of the redisgo_task binary under test.
std::string task_binary();

/// A unique temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  /// Writes `content` to path()/name and returns the full path.
  std::string write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

/// Polls `pred` every `every` until it is true or `timeout` passes; returns pred's last
/// value. A pred that asks a server should poll slower than the default (its own
/// commands count in the storm meters).
template <class Pred>
bool wait_until(Pred pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds every = std::chrono::milliseconds(2));

/// Waits until a renewal has extended `key` on `server` (its PTTL rose): the holder has seen the
/// lease as its own there. A daemon reports a node as having lost the key only if the lease was
/// ours there, and a grant that came after the quorum decided counts only from a renewal on.
bool wait_renewed(RedisServer& server, const std::string& key, std::chrono::milliseconds timeout);

/// A per-test key prefix ("rgt:<suite>.<test>:") so tests never share keys.
std::string test_key(const std::string& suffix = "lock");

/// Evaluations (EVAL + EVALSHA) the server has run so far (INFO commandstats).
long long script_calls(RedisServer& server);

}  // namespace redisgo::testing

#include <thread>
namespace redisgo::testing {
template <class Pred>
bool wait_until(Pred pred, std::chrono::milliseconds timeout, std::chrono::milliseconds every) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(every);
  }
  return pred();
}
/// Runs `cmd` (a redis-cli command line, bounded by timeout(1)) with `args` quoted for the
/// shell and returns its output without the trailing newline.
std::string run_redis_cli(std::string cmd, const std::vector<std::string>& args);

}  // namespace redisgo::testing
