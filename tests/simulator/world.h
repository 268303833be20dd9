#pragma once
/// The simulator's scheduler (docs/DESIGN.md "Simulation"): simulated time in µs, one event
/// queue, the run's Rng, and cooperative fibers, so that the lock layer's blocking calls run
/// unmodified: a fiber that waits (World::wait) is parked until it is notified or its deadline
/// comes on the simulated clock, and the scheduler runs the next event meanwhile. One thread:
/// nothing runs while a fiber runs, so a fiber sees the world stand still between two waits.
///
/// Determinism: events at the same instant run in the order they were scheduled (a sequence
/// number breaks the tie), every random choice comes from rng() in the order events make them,
/// and nothing reads a wall clock. So a seed replays its run exactly, trace and all.
///
/// Processes: every event and fiber may belong to a Process (a simulated daemon, keeper or
/// child). A frozen process (SIGSTOP, a paused VM) runs nothing: its events wait until it is
/// thawed. Then what arrived meanwhile (replies, messages, resets: the kernel took them) is
/// taken first, in the order it came; then the process's own timers; and its fibers resume in
/// an order drawn from rng(): threads that resume after a stop race, each finding everything
/// that arrived while it was stopped.

#include <ucontext.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "simulator/rng.h"

namespace redisgo::simulator {

using Time = std::int64_t;  ///< simulated µs since the run's start
inline constexpr Time kNever = INT64_MAX;
inline constexpr Time kMs = 1000;
inline constexpr Time kSecond = 1000 * kMs;

class World;

/// Thrown by World::wait in a fiber that the end of the run unwinds (not a std::exception:
/// nothing that catches those may take it for an error of its own).
struct FiberExit {};

/// A group of events and fibers frozen and thawed together.
/// What an event of a process is, for the order a thaw takes them in.
enum class EventKind {
  kTimer,    ///< the process's own doing when its time comes (a timeout, a timer)
  kArrival,  ///< something the kernel received for it (a reply, a message, a reset, a pipe)
  kResume,   ///< a fiber of it resumes (World's own)
};

class Process {
 public:
  explicit Process(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  bool frozen() const { return frozen_; }

 private:
  friend class World;
  std::string name_;
  bool frozen_ = false;
  struct Deferred {
    EventKind kind;
    std::function<void()> fn;
  };
  std::vector<Deferred> deferred_;  // events that came while frozen, in the order they came
};

/// A cooperative thread with its own stack.
class Fiber {
 public:
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;
  const std::string& name() const { return name_; }
  bool done() const { return done_; }

 private:
  friend class World;
  Fiber(World& world, Process* process, std::string name, std::function<void()> body);
  static void entry(unsigned lo, unsigned hi);

  World& world_;
  Process* process_;
  std::string name_;
  std::function<void()> body_;
  ucontext_t ctx_{};
  void* stack_ = nullptr;
  std::size_t mapped_ = 0;
  bool started_ = false;
  bool parked_ = false;
  bool unwinding_ = false;  // the run is over: its next wait throws FiberExit
  bool done_ = false;
  std::uint64_t generation_ = 0;  // one per wait: a wake for an older wait is stale
  bool wake_queued_ = false;
};

class World {
 public:
  explicit World(std::uint64_t seed);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  Time now() const { return now_; }
  Rng& rng() { return rng_; }
  std::uint64_t seed() const { return seed_; }

  /// Runs `fn` at `t` (not before now), as part of `process` (null: of no process).
  void at(Time t, Process* process, std::function<void()> fn, EventKind kind = EventKind::kTimer);
  void after(Time dt, Process* process, std::function<void()> fn, EventKind kind = EventKind::kTimer) {
    at(now_ + dt, process, std::move(fn), kind);
  }

  /// A fiber of `process`, started at the current instant (after the events already due).
  Fiber& spawn(Process* process, std::string name, std::function<void()> body);
  /// The fiber running, or null in an event.
  Fiber* current() const { return current_; }
  /// Parks the current fiber until notify() or `deadline`, whichever comes first.
  void wait(Time deadline);
  /// Parks the current fiber until `t` (notifications do not end it).
  void sleep_until(Time t);
  /// Ends the wait of `fiber` at the current instant (nothing if it is not waiting).
  void notify(Fiber* fiber);

  void freeze(Process& p);
  /// Thaws `group` together (a host's processes after SIGCONT of them all): what arrived for any
  /// of them is taken first, then their timers and fibers run in one drawn order, so that a
  /// keeper and a daemon's threads resumed at once race as they would.
  void thaw(const std::vector<Process*>& group);
  void thaw(Process& p) { thaw(std::vector<Process*>{&p}); }

  /// The end of a run: every fiber still alive is resumed once more, newest first, and its
  /// wait throws FiberExit, which unwinds its stack to its entry (what it holds is destroyed
  /// as on any return). A wait inside a destructor during that unwinding returns at once.
  void unwind_fibers();

  /// Runs events until the queue is empty, `limit` is reached or halt() was called.
  void run_until(Time limit);
  /// Stops run_until() after the current event (a violation was found).
  void halt() { halted_ = true; }
  bool halted() const { return halted_; }
  /// Events run so far.
  std::uint64_t events() const { return events_; }
  /// The simulated clock stood still for kSpinEvents events in a row: something spins (no
  /// wait on a timer or a reply between its turns). run_until() halts then.
  bool spinning() const { return spinning_; }
  static constexpr std::uint64_t kSpinEvents = 1'000'000;

  /// The run's trace: one line per event worth showing, with the simulated time. Empty
  /// (and free) unless tracing was asked for.
  bool tracing() const { return tracing_; }
  void set_tracing(bool on) { tracing_ = on; }
  void trace(const std::string& who, const std::string& what);
  const std::string& trace_text() const { return trace_; }

 private:
  struct Event {
    Time t;
    std::uint64_t seq;
    Process* process;
    std::function<void()> fn;
    EventKind kind;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const { return a.t != b.t ? a.t > b.t : a.seq > b.seq; }
  };
  friend class Fiber;
  void resume(Fiber* f);
  void park();  // from the current fiber to the scheduler
  void schedule_resume(Fiber* f, std::uint64_t generation);

  std::uint64_t seed_;
  Rng rng_;
  Time now_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t events_ = 0;
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  std::vector<std::unique_ptr<Fiber>> fibers_;
  Fiber* current_ = nullptr;
  ucontext_t scheduler_{};
  bool halted_ = false;
  bool spinning_ = false;
  std::vector<Process*> thawing_;  // the processes thaw() is taking events of
  struct Runnable {
    Process* process;
    EventKind kind;
    std::function<void()> fn;
  };
  std::vector<Runnable> runnable_;  // their timers and resumes, queued in a drawn order at the end
  std::uint64_t same_instant_ = 0;
  bool tracing_ = false;
  std::string trace_;
};

/// "12.345678" seconds, for traces.
std::string format_time(Time t);

}  // namespace redisgo::simulator
