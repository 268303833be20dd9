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
  void set_deadline(std::int64_t boot_ns, std::int64_t decided_ns) noexcept override {
    std::lock_guard lk(s_.mu_);
    s_.deadlines_.push_back({boot_ns, decided_ns});
  }
  process::KeeperAct keeper_act() const noexcept override {
    std::lock_guard lk(s_.mu_);
    return reaped_ ? s_.keeper_act_ : process::KeeperAct{};
  }
  int keeper_killed_by() const noexcept override {
    std::lock_guard lk(s_.mu_);
    return reaped_ ? s_.keeper_killed_by_ : 0;
  }
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
  std::function<void()> hook;
  {
    std::lock_guard lk(mu_);
    hook = hook_;
  }
  if (hook) hook();
  std::lock_guard lk(mu_);
  ++spawned_;
  running_ = true;
  code_.reset();
  keeper_act_ = {};
  keeper_killed_by_ = 0;
  deadlines_.clear();
  env_ = options.env;
  return std::make_unique<Job>(*this);
}

void FakeSpawner::set_spawn_hook(std::function<void()> hook) {
  std::lock_guard lk(mu_);
  hook_ = std::move(hook);
}

void FakeSpawner::set_fatal(std::vector<int> signals) {
  std::lock_guard lk(mu_);
  fatal_ = std::move(signals);
}

void FakeSpawner::finish(int code) {
  std::lock_guard lk(mu_);
  if (running_ && !code_) code_ = code;
}

void FakeSpawner::finish_by_keeper(int code, process::KeeperAct act) {
  std::lock_guard lk(mu_);
  if (!running_ || code_) return;
  code_ = code;
  keeper_act_ = act;
}

void FakeSpawner::kill_keeper() {
  std::lock_guard lk(mu_);
  if (!running_ || code_) return;
  code_ = 71;  // what the real Child reports (redisgo_task(1), EXIT STATUS)
  keeper_killed_by_ = SIGKILL;
}

std::vector<std::pair<std::int64_t, std::int64_t>> FakeSpawner::deadlines() const {
  std::lock_guard lk(mu_);
  return deadlines_;
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
