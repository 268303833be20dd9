#pragma once
/// After a lease ends in a step-down (internal to daemon/): the hold before contending again
/// (step_down_hold, longer for a failing host), and the hold while renewals are refused
/// (redisgo_task(1) "Renewals refused"), until a probe finds the rights granted.

#include <optional>
#include <string>
#include <vector>

#include "daemon/context.h"
#include "daemon/event_loop.h"
#include "daemon/refused_right.h"

namespace redisgo::daemon {

class Hold {
 public:
  Hold(Context& ctx, EventLoop& loop) : ctx_(ctx), loop_(loop) {}

  /// Waits out step_down_hold after stepping down; nullopt to contend again. A planned
  /// step-down (handover) holds step_down_hold as configured; a failing host longer each time.
  std::optional<int> after_step_down(const std::string& why, bool planned);
  /// supervise, after stepping down for refused renewals (`why`): holds back until a probe finds
  /// the right granted, and at least the step-down hold, saying so in STATUS=, the state metric
  /// and a note beside the key (redisgo_task(1) "Renewals refused"). nullopt to contend again.
  std::optional<int> while_refused(const lock::NodeError& refusal, const std::string& why);
  /// oneshot: a run whose renewals were refused (exit 77) names the right in its last line.
  void say_refused_at_exit(const lock::NodeError& refusal);

 private:
  /// Holds back for `hold` (STATUS= `status`, state stepped_down); nullopt to contend again.
  std::optional<int> hold_back(const std::string& status, Millis hold);
  /// The ACL user of the config ("default" when it names none).
  std::string acl_user() const;
  /// The commands this config's renewals run (what probe_rights tries).
  std::vector<std::string> renewal_commands() const;
  /// refused_right() for this config's ACL user and keys.
  RefusedRight name_refusal(const lock::NodeError& refusal, const lock::RightsProbe& probe) const;
  void show_refused(const RefusedRight& named);
  /// Probes until the rights are granted; an exit status when a stop came first.
  std::optional<int> probe_until_granted(const lock::NodeError& refusal, const std::string& head,
                                         const RefusedRight& named);
  /// The state ends: the metric, and on a stop (`drop_note`) our note beside the key.
  void end_refused(bool drop_note);
  /// A stop came while holding: our note goes, and the exit status of a stop while waiting.
  int stopped();

  Context& ctx_;
  EventLoop& loop_;
};

}  // namespace redisgo::daemon
