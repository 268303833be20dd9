#include "simulator/world.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <exception>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace redisgo::simulator {
namespace {

// The lock layer's deepest path (an acquisition with its replies parsed, std::function and
// maps) needs a few tens of KiB; 256 KiB of reserved, lazily committed memory leaves room.
constexpr std::size_t kStackBytes = 256 * 1024;

}  // namespace

std::string format_time(Time t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%06" PRId64, t / kSecond, t % kSecond);
  return buf;
}

Fiber::Fiber(World& world, Process* process, std::string name, std::function<void()> body)
    : world_(world), process_(process), name_(std::move(name)), body_(std::move(body)) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  mapped_ = kStackBytes + page;
  stack_ = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                  -1, 0);
  if (stack_ == MAP_FAILED) throw std::runtime_error("simulator: cannot map a fiber stack");
  ::mprotect(stack_, page, PROT_NONE);  // an overflow faults instead of corrupting the heap
  ::getcontext(&ctx_);
  ctx_.uc_stack.ss_sp = static_cast<char*>(stack_) + page;
  ctx_.uc_stack.ss_size = kStackBytes;
  ctx_.uc_link = nullptr;
  const auto self = reinterpret_cast<std::uintptr_t>(this);
  ::makecontext(&ctx_, reinterpret_cast<void (*)()>(&Fiber::entry), 2, static_cast<unsigned>(self & 0xffffffffu),
                static_cast<unsigned>(self >> 32));
}

Fiber::~Fiber() {
  if (stack_ != nullptr) ::munmap(stack_, mapped_);
}

void Fiber::entry(unsigned lo, unsigned hi) {
  auto* f = reinterpret_cast<Fiber*>((static_cast<std::uintptr_t>(hi) << 32) | lo);
  try {
    f->body_();
  } catch (const FiberExit&) {
    // the run is over (World::unwind_fibers)
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simulator: fiber %s ended by an exception: %s\n", f->name_.c_str(), e.what());
    std::abort();
  }
  f->done_ = true;
  f->body_ = nullptr;
  f->world_.park();  // never resumed again
}

World::World(std::uint64_t seed) : seed_(seed), rng_(seed) {}

World::~World() = default;

void World::at(Time t, Process* process, std::function<void()> fn, EventKind kind) {
  if (kind == EventKind::kResume && t <= now_ &&
      std::find(thawing_.begin(), thawing_.end(), process) != thawing_.end()) {
    runnable_.push_back(Runnable{process, kind, std::move(fn)});
    return;
  }
  queue_.push(Event{t < now_ ? now_ : t, seq_++, process, std::move(fn), kind});
}

Fiber& World::spawn(Process* process, std::string name, std::function<void()> body) {
  fibers_.push_back(std::unique_ptr<Fiber>(new Fiber(*this, process, std::move(name), std::move(body))));
  Fiber* f = fibers_.back().get();
  f->parked_ = true;
  schedule_resume(f, f->generation_);
  return *f;
}

void World::schedule_resume(Fiber* f, std::uint64_t generation) {
  f->wake_queued_ = true;
  at(
      now_, f->process_,
      [this, f, generation] {
        if (f->generation_ != generation) return;
        f->wake_queued_ = false;
        if (f->parked_ && !f->done_) resume(f);
      },
      EventKind::kResume);
}

void World::resume(Fiber* f) {
  f->parked_ = false;
  f->started_ = true;
  current_ = f;
  ::swapcontext(&scheduler_, &f->ctx_);
  current_ = nullptr;
}

void World::park() {
  Fiber* f = current_;
  f->parked_ = true;
  ::swapcontext(&f->ctx_, &scheduler_);
}

void World::wait(Time deadline) {
  Fiber* f = current_;
  if (f == nullptr) throw std::logic_error("simulator: wait() outside a fiber");
  if (f->unwinding_) {
    if (std::uncaught_exceptions() > 0) return;  // a destructor on the way out: no more waits
    throw FiberExit{};
  }
  const std::uint64_t generation = ++f->generation_;
  f->wake_queued_ = false;
  if (deadline != kNever) {
    at(
        deadline, f->process_,
        [this, f, generation] {
          if (f->generation_ == generation && f->parked_ && !f->done_) resume(f);
        },
        EventKind::kResume);
  }
  park();
  ++f->generation_;  // a wake still queued for this wait is stale now
  if (f->unwinding_ && std::uncaught_exceptions() == 0) throw FiberExit{};
}

void World::unwind_fibers() {
  for (auto it = fibers_.rbegin(); it != fibers_.rend(); ++it) {
    Fiber* f = it->get();
    if (f->done_) continue;
    f->unwinding_ = true;
    if (!f->started_) {
      f->done_ = true;
      continue;
    }
    if (f->parked_) resume(f);
  }
}

void World::sleep_until(Time t) {
  while (now_ < t) wait(t);
}

void World::notify(Fiber* f) {
  if (f == nullptr || !f->parked_ || f->done_ || f->wake_queued_) return;
  schedule_resume(f, f->generation_);
}

void World::freeze(Process& p) { p.frozen_ = true; }

void World::thaw(const std::vector<Process*>& group) {
  // What arrived first, in the order it came; then the timers and the resumes (those that were
  // due, and those that what arrived causes) in a drawn order.
  thawing_ = group;
  std::vector<std::pair<Process*, Process::Deferred>> deferred;
  for (Process* p : group) {
    p->frozen_ = false;
    for (auto& d : p->deferred_) deferred.emplace_back(p, std::move(d));
    p->deferred_.clear();
  }
  for (auto& [p, d] : deferred) {
    if (d.kind != EventKind::kArrival) continue;
    ++events_;
    d.fn();
  }
  for (auto& [p, d] : deferred) {
    if (d.kind != EventKind::kArrival) runnable_.push_back(Runnable{p, d.kind, std::move(d.fn)});
  }
  thawing_.clear();
  auto runnable = std::move(runnable_);
  runnable_.clear();
  for (std::size_t i = runnable.size(); i > 1; --i) std::swap(runnable[i - 1], runnable[rng_.below(i)]);
  for (auto& r : runnable) at(now_, r.process, std::move(r.fn), r.kind);
}

void World::run_until(Time limit) {
  while (!halted_ && !queue_.empty() && queue_.top().t <= limit) {
    Event e = std::move(const_cast<Event&>(queue_.top()));
    queue_.pop();
    same_instant_ = e.t == now_ ? same_instant_ + 1 : 0;
    if (same_instant_ > kSpinEvents) {
      spinning_ = true;
      halted_ = true;
      break;
    }
    now_ = e.t;
    if (e.process != nullptr && e.process->frozen_) {
      e.process->deferred_.push_back(Process::Deferred{e.kind, std::move(e.fn)});
      continue;
    }
    ++events_;
    e.fn();
  }
  if (!halted_ && now_ < limit) now_ = limit;
}

void World::trace(const std::string& who, const std::string& what) {
  if (!tracing_) return;
  trace_ += format_time(now_);
  trace_ += ' ';
  trace_ += who;
  trace_ += ": ";
  trace_ += what;
  trace_ += '\n';
}

}  // namespace redisgo::simulator
