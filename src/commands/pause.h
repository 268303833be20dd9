#pragma once
/// `redisgo_task pause` and `resume` (README "A maintenance switch"): while a key is paused
/// no host starts its job. The pause is a key of its own ("<base>:pause", always with a
/// TTL, so it is never forgotten) holding who paused it, why, since and until when; the
/// acquire scripts grant nothing while it exists and answer as if it held the lease for its
/// TTL (lock/scripts.h, paused()), so waiters sleep until it ends, or until `resume` wakes
/// them as a release would.

#include <chrono>
#include <ostream>
#include <string>

#include "config/config.h"

namespace redisgo::commands {

using Millis = std::chrono::milliseconds;

/// "alice@ops1": who runs an operator's command that Redis records (`pause`, `adopt`): the
/// sudo caller rather than root, when there is one, at this host's name.
std::string operator_name();

/// Writes the pause on every node (a quorum must take it, or it is dropped again: 69, or 77
/// when refused). A running holder finishes its job, or with `stop` is asked to stop it now
/// (as `handover` asks; 75 when nobody heard the request). 0 once paused.
int run_pause(const config::Config& config, Millis duration, const std::string& reason, bool stop, std::ostream& out,
              std::ostream& err);
/// Drops the pause and wakes the waiters. 0 (also when the key was not paused), 69/77 as pause.
int run_resume(const config::Config& config, std::ostream& out, std::ostream& err);

}  // namespace redisgo::commands
