#pragma once
/// The tables of the lease scripts (tables_*.cpp), and the names their rows share.

#include <string>

#include "lua/table.h"

namespace redisgo::luatable {

// Keys as LeaseKeys names them beside a lease key "k" (the wake channel is the line's name
// without "line", plus "wake:<holder>"), and the release channel.
inline const std::string kKey = "k", kFence = "k:fence", kLine = "k:line", kPause = "k:pause", kClaim = "k:claim";
inline const std::string kSlot1 = "k:1", kSlot2 = "k:2", kReleased = "k:released";
inline std::string wake(const std::string& holder) { return "k:wake:" + holder; }
inline std::string turn(const std::string& holder) { return "\1turn:" + holder; }

/// Redis 7.0's texts for a refusal inside a script, and for a WRONGTYPE that ended one (its
/// " script: <sha>, on @user_script:<line>." tail is not compared).
inline const std::string kRefused = "ERR The user executing the script can't run this command or subcommand";
inline const std::string kChannelRefused =
    "ERR The user executing the script can't publish to the channel mentioned in the command";
inline const std::string kWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value";
inline Pat Raised(const std::string& error) { return ErrStarts(error + " script: "); }

/// A young server (Age::kYoung) is up 0 or 1 whole seconds when its row starts, and may reach 2
/// during the row; a 60 s guard then has guard - (uptime - 1) s left.
inline const Pat kGuardLeft60s = In(59000, 61000);

Table acquire_fair_table();
Table acquire_slot_fair_table();
Table renew_table();
Table release_table();
Table undo_table();
Table raise_fence_table();
Table inspect_table();
Table claim_table();
Table finish_claim_table();
Table read_claims_table();
Table publish_table();
Table release_fair_table();
Table pass_turn_table();
Table read_line_table();
Table pause_table();
Table resume_table();
Table read_pause_table();
Table list_key_table();
Table slots_beyond_table();
Table check_rights_table();
Table read_once_table();
Table adopt_table();
Table drop_adopt_table();
Table probe_rights_table();
Table read_refusal_table();
Table commands_table();

}  // namespace redisgo::luatable
