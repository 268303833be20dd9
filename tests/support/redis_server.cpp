#include "support/redis_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
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
    if (port_ == 0 || attempt > 0) port_ = free_port();
    launch();
    if (pid_ > 0) return;
  }
  ADD_FAILURE() << "could not start redis-server";
}

void RedisServer::launch() {
  std::string server = find_redis_server();
  if (server.empty()) {
    ADD_FAILURE() << "redis-server not found: run scripts/setup to install it";
    return;
  }
  std::string conf = dir_ + "/redis.conf";
  {
    std::ofstream out(conf);
    out << "bind 127.0.0.1\nport " << port_ << "\nunixsocket " << dir_ << "/redis.sock\nunixsocketperm 700\n"
        << "save \"\"\nappendonly no\ndir " << dir_ << "\nlogfile " << dir_ << "/redis.log\n"
        << "pidfile " << dir_ << "/redis.pid\ndaemonize no\n";
    if (!options_.password.empty()) out << "requirepass " << options_.password << "\n";
    for (const auto& u : options_.acl_users) out << u << "\n";
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    // Do not let the server inherit the test's blocked signal mask.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setpgid(0, 0);
    ::execl(server.c_str(), server.c_str(), conf.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (pid < 0) return;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    // The unix socket is opened a little after the TCP port; wait for both.
    if (port_answers(port_) && ::access(unix_socket().c_str(), F_OK) == 0) {
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
  if (!options_.password.empty()) cmd += " --no-auth-warning -a '" + options_.password + "'";
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
