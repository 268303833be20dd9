// Every lease script's table (tables_*.cpp) on a real redis-server (LuaTable.*) and on the
// simulated node (LuaTableSim.*): the same rows must pass on both. `ctest -L lua` runs them.

#include <gtest/gtest.h>

#include "lock/scripts.h"
#include "lua/replies_understood.h"
#include "lua/tables.h"

namespace redisgo::luatable {
namespace {

#define LUA_TABLE(Name, table)                 \
  TEST(LuaTable, Name) {                       \
    auto backend = make_real_backend();        \
    run_table(*backend, table());              \
  }                                            \
  TEST(LuaTableSim, Name) {                    \
    auto backend = make_sim_backend();         \
    run_table(*backend, table());              \
  }

LUA_TABLE(AcquireFair, acquire_fair_table)
LUA_TABLE(AcquireSlotFair, acquire_slot_fair_table)
LUA_TABLE(Renew, renew_table)
LUA_TABLE(Release, release_table)
LUA_TABLE(Undo, undo_table)
LUA_TABLE(RaiseFence, raise_fence_table)
LUA_TABLE(Inspect, inspect_table)
LUA_TABLE(Claim, claim_table)
LUA_TABLE(FinishClaim, finish_claim_table)
LUA_TABLE(ReadClaims, read_claims_table)
LUA_TABLE(Publish, publish_table)
LUA_TABLE(ReleaseFair, release_fair_table)
LUA_TABLE(PassTurn, pass_turn_table)
LUA_TABLE(ReadLine, read_line_table)
LUA_TABLE(Pause, pause_table)
LUA_TABLE(Resume, resume_table)
LUA_TABLE(ReadPause, read_pause_table)
LUA_TABLE(ListKey, list_key_table)
LUA_TABLE(SlotsBeyond, slots_beyond_table)
LUA_TABLE(CheckRights, check_rights_table)
LUA_TABLE(ReadOnce, read_once_table)
LUA_TABLE(Adopt, adopt_table)
LUA_TABLE(DropAdopt, drop_adopt_table)
LUA_TABLE(ProbeRights, probe_rights_table)
LUA_TABLE(ReadRefusal, read_refusal_table)
LUA_TABLE(Commands, commands_table)

// Each table checks that its script's parser understands every reply it got that is not an
// error (run_table): so every script must have its parser there.
TEST(LuaReplies, EveryScriptHasItsParser) {
  for (const redis::Script* s : lock::kLeaseScripts) {
    EXPECT_TRUE(understood(std::string(s->source), sim::Resp::nil(), 0).has_value()) << s->source.substr(0, 200);
  }
}

}  // namespace
}  // namespace redisgo::luatable
