// The historic defects, brought back as the commits that fixed them removed them (docs/DESIGN.md
// "Simulation", mutants). Each is a change of a script's text on its way to the simulated
// nodes: nothing of it is compiled into the daemon. A mutant whose text no script holds any
// more fails its run at once (SimMutants.EachMutantStillApplies), rather than pass unmutated.
#include "simulator/sim.h"

namespace redisgo::simulator {

const std::vector<Mutant>& mutants() {
  static const std::vector<Mutant> all{
      {"no_guard",
       "the restart guard off (before 890870d): a node that restarted empty grants an absent key at once",
       {{"lib/guard.lua", "local function guard_left(guard_ms)\n  if guard_ms <= 0 then\n",
         "local function guard_left(guard_ms)\n  if true then\n"}}},
      {"slot_raise_no_giveup",
       "a semaphore's fence raise without the give-up (before 43871b5): a raise that finds the counter at the "
       "token already answers 1, and two slot holders may share a token",
       {{"raise_fence.lua", "elseif slot == '1' then\n  return 2\nend\n", "end\n"}}},
      {"turn_past_guard",
       "a turn written for a slot the restart lost (before ceeb461): the take of a turn wakes the line's head "
       "for another free slot without asking the restart guard",
       {{"acquire_slot_fair.lua",
         "if other and redis.pcall('EXISTS', other) == 0 and (not mine or guard_left(tonumber(guard_ms) or 0) <= 0) "
         "then",
         "if other and redis.pcall('EXISTS', other) == 0 then"}}},
      {"release_publish_before_compare",
       "planted: the release hands the key to the line's head (PUBLISH \"turn\", the turn's SET) before it "
       "compares the key with its holder",
       {{"release_fair.lua",
         "if not held then\n  return 0\nend\nif held ~= lease then\n  local fence = redis.pcall('GET', fence_key)\n"
         "  return {0, held, type(fence) == 'string' and fence or ''}\nend\n"
         "local ok, kind = pcall(wake, line_key, lease_key, window, '')\n",
         "local ok, kind = pcall(wake, line_key, lease_key, window, '')\nif not held then\n  return 0\nend\n"
         "if held ~= lease then\n  local fence = redis.pcall('GET', fence_key)\n"
         "  return {0, held, type(fence) == 'string' and fence or ''}\nend\n"}}},
      {"release_by_holder",
       "a release and an undo that compare the key with the holder id, not with the attempt's lease id "
       "(before the lease ids): one that arrives late deletes the same holder's later lease",
       {{"release_fair.lua", "if held ~= lease then\n", "if holder_of(held) ~= holder_of(lease) then\n"},
        {"undo.lua", "elseif held ~= lease then\n", "elseif holder_of(held) ~= holder_of(lease) then\n"}}},
      {"renew_no_fence_check",
       "planted: a renewal on the only node sets a vanished key again without the fence check (a counter above "
       "its token proves a later grant): met when an operator deletes the key under its holder",
       {{"renew.lua",
         "  if only == '1' and not bad and (tonumber(fence) or 0) > tonumber(token) then\n    return 0\n  end\n",
         ""}}},
  };
  return all;
}

const Mutant* find_mutant(const std::string& name) {
  for (const auto& m : mutants()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

}  // namespace redisgo::simulator
