#include "support/fake_spawner.h"

#include <algorithm>

namespace redisgo::testing {

class FakeSpawner::Job final : public process::Job {
 public:
  explicit Job(FakeSpawner& s) : s_(s) {}
  pid_t pid() const noexcept override { return 4242; }
  pid_t keeper_pid() const noexcept override { return 4241; }
  int exit_fd() const noexcept override { return -1; }  // the driver polls try_wait
  bool running() const noexcept override { return !reaped_; }
  std::optional<int> try_wait() override {
    std::lock_guard lk(s_.mu_);
    if (reaped_ || !s_.code_) return reaped_ ? code_ : std::nullopt;
    reaped_ = true;
    code_ = s_.code_;
    s_.running_ = false;
    return code_;
  }
  void signal_group(int sig) noexcept override {
    std::lock_guard lk(s_.mu_);
    s_.signals_.push_back(sig);
    if (!s_.code_ && std::find(s_.fatal_.begin(), s_.fatal_.end(), sig) != s_.fatal_.end()) s_.code_ = 128 + sig;
  }
  void force_kill() noexcept override { signal_group(SIGKILL); }
  void set_deadline(std::int64_t) noexcept override {}
  int terminate_group(int sig, process::Millis) noexcept override {
    signal_group(sig);
    signal_group(SIGKILL);
    return try_wait().value_or(-1);
  }

 private:
  FakeSpawner& s_;
  bool reaped_ = false;
  std::optional<int> code_;
};

std::unique_ptr<process::Job> FakeSpawner::spawn(const process::SpawnOptions& options) {
  std::lock_guard lk(mu_);
  ++spawned_;
  running_ = true;
  code_.reset();
  env_ = options.env;
  return std::make_unique<Job>(*this);
}

void FakeSpawner::set_fatal(std::vector<int> signals) {
  std::lock_guard lk(mu_);
  fatal_ = std::move(signals);
}

void FakeSpawner::finish(int code) {
  std::lock_guard lk(mu_);
  if (running_ && !code_) code_ = code;
}

int FakeSpawner::spawned() const {
  std::lock_guard lk(mu_);
  return spawned_;
}

bool FakeSpawner::running() const {
  std::lock_guard lk(mu_);
  return running_;
}

std::vector<int> FakeSpawner::signals() const {
  std::lock_guard lk(mu_);
  return signals_;
}

std::map<std::string, std::string> FakeSpawner::last_env() const {
  std::lock_guard lk(mu_);
  return env_;
}

}  // namespace redisgo::testing
