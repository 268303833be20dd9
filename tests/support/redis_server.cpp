#include "support/redis_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

namespace redisgo::testing {
namespace {

namespace fs = std::filesystem;

std::string find_redis_server() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

/// The "v=X.Y.Z" of `redis-server --version` run as `argv`; "" when it does not run.
std::string server_version(const std::vector<std::string>& argv) {
  std::string cmd = "timeout 10";
  for (const auto& a : argv) cmd += " '" + a + "'";
  cmd += " --version 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 512> buf;
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    ::pclose(p);
  }
  const auto at = out.find(" v=");
  if (at == std::string::npos) return "";
  return out.substr(at + 3, out.find(' ', at + 3) - at - 3);
}

bool at_least_7_2(const std::string& version) {
  int major = 0, minor = 0;
  return std::sscanf(version.c_str(), "%d.%d", &major, &minor) == 2 && (major > 7 || (major == 7 && minor >= 2));
}

bool port_answers(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

bool port_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

/// A port in 20000-29999 that is free, and whose cluster bus port (+10000) is free too
/// (the kernel's ephemeral ports are too high for a bus port).
int free_port_with_bus() {
  static std::mt19937 rng{std::random_device{}()};
  for (int i = 0; i < 500; ++i) {
    const int port = 20000 + static_cast<int>(rng() % 10000);
    if (port_free(port) && port_free(port + 10000)) return port;
  }
  throw std::runtime_error("no free port pair for a cluster node");
}

// Reaps pid if it has exited; returns true once it is gone.
bool reaped(pid_t pid) {
  int status;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  return r == pid || (r < 0 && errno == ECHILD);
}

}  // namespace

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("bind failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string task_binary() { return REDISGO_TASK_BINARY; }

std::vector<std::string> redis_server_with_waitaof(std::string* version) {
  static const std::pair<std::vector<std::string>, std::string> found = [] {
    const std::string host = find_redis_server();
    if (!host.empty()) {
      const std::string v = server_version({host});
      if (at_least_7_2(v)) return std::make_pair(std::vector<std::string>{host}, v);
    }
    const std::string root = "/var/cache/redisgo-task/trixie";
    const std::vector<std::string> loaded{root + "/lib64/ld-linux-x86-64.so.2", "--library-path",
                                          root + "/lib/x86_64-linux-gnu:" + root + "/usr/lib/x86_64-linux-gnu",
                                          root + "/usr/bin/redis-server"};
    if (::access(loaded[0].c_str(), X_OK) == 0 && ::access(loaded[3].c_str(), R_OK) == 0) {
      const std::string v = server_version(loaded);
      if (at_least_7_2(v)) return std::make_pair(loaded, v);
    }
    return std::make_pair(std::vector<std::string>{}, std::string());
  }();
  if (version) *version = found.second;
  return found.first;
}

RedisServerOptions with_password(std::string password) {
  RedisServerOptions o;
  o.password = std::move(password);
  return o;
}

RedisServerOptions with_acl_user(std::string line) {
  RedisServerOptions o;
  o.acl_users.push_back(std::move(line));
  return o;
}

namespace {

void openssl(const std::string& args) {
  const std::string cmd = "openssl " + args + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
}

}  // namespace

const TlsFiles& test_certificates() {
  static const TlsFiles files = [] {
    // One directory for the whole test process (the files are read-only inputs).
    std::string tmpl = (fs::temp_directory_path() / "redisgo-tls-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    const std::string d = tmpl;
    static struct Cleanup {
      std::string dir;
      ~Cleanup() {
        std::error_code ec;
        fs::remove_all(dir, ec);
      }
    } cleanup{d};
    TlsFiles f;
    f.ca = d + "/ca.pem";
    f.server_cert = d + "/server.pem";
    f.server_key = d + "/server.key";
    f.client_cert = d + "/client.pem";
    f.client_key = d + "/client.key";
    f.other_ca = d + "/other-ca.pem";
    f.garbage = d + "/garbage.pem";
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    openssl("req -x509 " + ec + " -days 30 -subj /CN=redisgo-test-ca -keyout " + d + "/ca.key -out " + f.ca);
    openssl("req -x509 " + ec + " -days 30 -subj /CN=redisgo-other-ca -keyout " + d + "/other-ca.key -out " + f.other_ca);
    std::ofstream(d + "/server.ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    openssl("req " + ec + " -subj /CN=localhost -keyout " + f.server_key + " -out " + d + "/server.csr");
    openssl("x509 -req -in " + d + "/server.csr -CA " + f.ca + " -CAkey " + d + "/ca.key -CAcreateserial -days 30 -extfile " +
            d + "/server.ext -out " + f.server_cert);
    openssl("req " + ec + " -subj /CN=redisgo-test-client -keyout " + f.client_key + " -out " + d + "/client.csr");
    openssl("x509 -req -in " + d + "/client.csr -CA " + f.ca + " -CAkey " + d + "/ca.key -CAcreateserial -days 30 -out " +
            f.client_cert);
    std::ofstream(f.garbage) << "this is not a certificate\n";
    for (const auto* key : {&f.server_key, &f.client_key}) ::chmod(key->c_str(), 0600);
    return f;
  }();
  return files;
}

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "redisgo-test-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& content) const {
  std::string p = path_ + "/" + name;
  std::ofstream out(p, std::ios::binary);
  out << content;
  return p;
}

std::string test_key(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "global";
  return "rgt:" + name + ":" + suffix;
}

bool wait_renewed(RedisServer& server, const std::string& key, std::chrono::milliseconds timeout) {
  auto pttl = [&] {
    try {
      return std::stoll(server.cli({"PTTL", key}));
    } catch (...) {
      return -2LL;
    }
  };
  const long long first = pttl();
  return first > 0 && wait_until([&] { return pttl() > first; }, timeout, std::chrono::milliseconds(20));
}

long long script_calls(RedisServer& server) {
  long long n = 0;
  std::istringstream in(server.cli({"INFO", "commandstats"}));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cmdstat_eval", 0) != 0) continue;
    auto at = line.find("calls=");
    if (at != std::string::npos) n += std::stoll(line.substr(at + 6));
  }
  return n;
}

RedisServer::RedisServer(RedisServerOptions options) : options_(std::move(options)) {
  std::string tmpl = (fs::temp_directory_path() / "redisgo-redis-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  start();
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    kill();
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void RedisServer::start() {
  if (pid_ > 0) return;
  // A port picked by free_port() can be taken before redis binds it; try a few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (port_ == 0 || attempt > 0) port_ = options_.cluster_bus ? free_port_with_bus() : free_port();
    launch();
    if (pid_ > 0) return;
  }
  ADD_FAILURE() << "could not start redis-server";
}

void RedisServer::launch() {
  std::vector<std::string> program = options_.program;
  if (program.empty() && !find_redis_server().empty()) program = {find_redis_server()};
  if (program.empty()) {
    ADD_FAILURE() << "redis-server not found: run scripts/setup to install it";
    return;
  }
  std::string conf = dir_ + "/redis.conf";
  {
    std::ofstream out(conf);
    if (options_.tls) {
      const TlsFiles& t = *options_.tls;
      out << "port 0\ntls-port " << port_ << "\ntls-cert-file " << t.server_cert << "\ntls-key-file " << t.server_key
          << "\ntls-ca-cert-file " << t.ca << "\ntls-auth-clients " << (options_.tls_auth_clients ? "yes" : "no")
          << "\n";
    } else {
      out << "port " << port_ << "\n";
    }
    out << "bind 127.0.0.1\n";
    if (!options_.sentinel) {
      out << "unixsocket " << dir_ << "/redis.sock\nunixsocketperm 700\nsave \"\"\nappendonly no\n";
    }
    out << "dir " << dir_ << "\nlogfile " << dir_ << "/redis.log\npidfile " << dir_ << "/redis.pid\ndaemonize no\n";
    if (!options_.password.empty()) out << "requirepass " << options_.password << "\n";
    for (const auto& u : options_.acl_users) out << u << "\n";
    for (const auto& line : options_.extra_config) out << line << "\n";
  }
  // Built before the fork: the child only execs.
  std::string sentinel_flag = "--sentinel";
  std::vector<char*> argv;
  for (auto& a : program) argv.push_back(a.data());
  argv.push_back(conf.data());
  if (options_.sentinel) argv.push_back(sentinel_flag.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    // Do not let the server inherit the test's blocked signal mask.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setpgid(0, 0);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) return;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    // The unix socket is opened a little after the TCP port; wait for both.
    if (port_answers(port_) && (options_.sentinel || ::access(unix_socket().c_str(), F_OK) == 0)) {
      pid_ = pid;
      return;
    }
    int status;
    if (::waitpid(pid, &status, WNOHANG) == pid) return;  // died: port taken, retry
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (reaped(pid_)) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill();
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void RedisServer::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void RedisServer::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

std::string RedisServer::cli(const std::vector<std::string>& args) const {
  // Bounded: a paused (SIGSTOPped) server must not hang the test.
  std::string cmd = "timeout 5 redis-cli -h 127.0.0.1 -p " + std::to_string(port_);
  if (options_.tls) {
    cmd += " --tls --cacert '" + options_.tls->ca + "' --cert '" + options_.tls->client_cert + "' --key '" +
           options_.tls->client_key + "'";
  }
  if (!options_.password.empty()) cmd += " --no-auth-warning -a '" + options_.password + "'";
  return run_redis_cli(std::move(cmd), args);
}

std::string run_redis_cli(std::string cmd, const std::vector<std::string>& args) {
  for (const auto& a : args) {
    std::string quoted = "'";
    for (char c : a) quoted += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    cmd += " " + quoted + "'";
  }
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace redisgo::testing
