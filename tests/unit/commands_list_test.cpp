// `redisgo_task list`'s judgement: the nodes' answers merged under the quorum, and what the
// text and JSON say (commands/list.h). The talking is tested in cli_list_test.cpp.

#include <gtest/gtest.h>

#include <sstream>

#include "commands/list.h"

namespace commands_list_test {

using namespace redisgo::commands::list;

namespace {

NodeKey held_by(const std::string& holder, std::int64_t ttl = 3000, const std::string& fence = "1795000000000000") {
  NodeKey k;
  k.read = true;
  k.holder = holder;
  k.ttl_ms = holder.empty() ? -2 : ttl;
  k.fence = fence;
  return k;
}

NodeScan node(const std::string& name, std::vector<std::pair<std::string, NodeKey>> keys) {
  NodeScan s;
  s.node = name;
  s.reachable = true;
  s.keys = std::move(keys);
  return s;
}

}  // namespace

TEST(ListMerge, AHolderNeedsAQuorumOfNodes) {
  const std::string a = "web1:10:0123456789abcdef0123456789abcdef";
  const std::string b = "web2:20:0123456789abcdef0123456789abcdef";
  auto rows = merge({node("n1", {{"job", held_by(a, 3000)}, {"split", held_by(a)}, {"free", held_by("")}}),
                     node("n2", {{"job", held_by(a, 2000)}, {"split", held_by(b)}, {"free", held_by("")}}),
                     node("n3", {{"job", held_by("")}, {"split", held_by("")}, {"free", held_by("")}})},
                    2);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].key, "free");  // sorted by key
  EXPECT_EQ(rows[0].state, "free");
  EXPECT_EQ(rows[1].key, "job");
  EXPECT_EQ(rows[1].state, "held");
  EXPECT_EQ(rows[1].holder, a);
  EXPECT_EQ(rows[1].host, "web1");
  EXPECT_EQ(rows[1].ttl_ms, 2000) << "the quorum's TTL is the lower one";
  ASSERT_TRUE(rows[1].since_s);
  EXPECT_EQ(*rows[1].since_s, 1795000000);
  EXPECT_EQ(rows[2].state, "split");
}

// A waiter granted a slot on one node only (undone) raises that node's counter: the token and
// the grant's time shown are those a quorum of counters has reached, the holder's.
TEST(ListMerge, TheTokenIsWhatAQuorumOfCountersReachedNotOneNodesRaise) {
  const std::string a = "web1:10:0123456789abcdef0123456789abcdef";
  auto rows = merge({node("n1", {{"job", held_by(a, 3000, "1795000041000000")}}),
                     node("n2", {{"job", held_by(a, 3000, "1795000000000000")}}),
                     node("n3", {{"job", held_by(a, 3000, "1795000000000000")}})},
                    2);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].token);
  EXPECT_EQ(*rows[0].token, 1795000000000000u);
  ASSERT_TRUE(rows[0].since_s);
  EXPECT_EQ(*rows[0].since_s, 1795000000);
  // One node with a counter (the others restarted empty): that one.
  rows = merge({node("n1", {{"job", held_by(a, 3000, "1795000041000000")}}), node("n2", {{"job", held_by(a, 3000, "")}}),
                node("n3", {{"job", held_by(a, 3000, "")}})},
               2);
  ASSERT_TRUE(rows[0].token);
  EXPECT_EQ(*rows[0].token, 1795000041000000u);
}

TEST(ListMerge, TooFewNodesReadIsUnreadableAndACorruptFenceIsNoToken) {
  NodeKey refused;
  refused.error = "NOPERM this user has no permissions to access one of the keys";
  NodeKey corrupt = held_by("", -2, "not-a-number");
  auto rows = merge({node("n1", {{"k", refused}, {"c", corrupt}}), node("n2", {{"k", refused}, {"c", corrupt}})}, 2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].key, "k");
  EXPECT_EQ(rows[1].state, "unreadable");
  EXPECT_NE(rows[1].error.find("NOPERM"), std::string::npos);
  EXPECT_EQ(rows[0].state, "free");
  EXPECT_FALSE(rows[0].token) << "a fence counter that is not a number is no token";
  std::ostringstream text;
  write_text(rows, {}, text);
  EXPECT_NE(text.str().find("c: free, token unreadable"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("k: unreadable (NOPERM"), std::string::npos) << text.str();
}

TEST(ListMerge, SlotsLinePauseAndTheLatestClaim) {
  NodeKey k = held_by("h:1:0123456789abcdef0123456789abcdef");
  k.slots = {{1, "h2:2:0123456789abcdef0123456789abcdef", 1500}};
  k.line = 3;
  k.pause_ttl_ms = 60000;
  k.paused_by = "alice@ops1";
  k.pause_reason = "schema migration";
  k.paused_since_ms = "1795000000000";
  k.paused_until_ms = "1795000600000";
  NodeScan one = node("n1", {{"k", k}});
  one.claims = {{"k", LastClaim{1795000000, "h:1:x", "0"}}, {"k", LastClaim{1794999000, "h:1:y", "1"}}};
  auto rows = merge({one}, 1);
  ASSERT_EQ(rows.size(), 1u);
  const Row& r = rows[0];
  ASSERT_EQ(r.slots.size(), 1u);
  EXPECT_EQ(r.slots[0].slot, 1);
  EXPECT_EQ(r.line, 3);
  EXPECT_TRUE(r.paused);
  EXPECT_EQ(r.paused_by, "alice@ops1");
  ASSERT_TRUE(r.claim);
  EXPECT_EQ(r.claim->holder, "h:1:x") << "the latest slot's claim";
  std::ostringstream json;
  write_json(rows, {one}, json);
  EXPECT_NE(json.str().find("\"paused\":{\"by\":\"alice@ops1\",\"reason\":\"schema migration\""), std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find("\"slots\":[{\"slot\":1,"), std::string::npos) << json.str();
  EXPECT_NE(json.str().find("\"once_per\":{\"slot\":"), std::string::npos) << json.str();
  std::ostringstream text;
  write_text(rows, {one}, text);
  EXPECT_NE(text.str().find("  paused by alice@ops1 since "), std::string::npos) << text.str();
  EXPECT_NE(text.str().find(": schema migration"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("3 waiting in line"), std::string::npos) << text.str();
}

// Renewals refused: the note a daemon that holds back leaves beside the key (one node's is
// enough, the newest wins) says so under the key, text and JSON, though the key reads free.
TEST(ListMerge, ADaemonHoldingBackForARefusedRightIsSaid) {
  NodeKey older = held_by("");
  older.refusal = "web1:10:aa\n1795000000000\nredisgo\n+pexpire\nERR The user executing the script can't run this command";
  NodeKey newer = held_by("");
  newer.refusal = "web2:20:bb\n1795000060000\nredisgo\n+pexpire\nERR The user executing the script can't run this command";
  NodeKey none = held_by("");
  auto rows = merge({node("n1", {{"k", older}}), node("n2", {{"k", newer}}), node("n3", {{"k", none}})}, 2);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].state, "free");
  ASSERT_TRUE(rows[0].refusal);
  EXPECT_EQ(rows[0].refusal->holder, "web2:20:bb");
  EXPECT_EQ(rows[0].refusal->right, "+pexpire");
  std::ostringstream text;
  write_text(rows, {}, text);
  EXPECT_NE(text.str().find("  alert: renewals refused since 2026-11-18T"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("the ACL user 'redisgo' of web2 lacks +pexpire; its daemon does not take the lease until it "
                            "is granted\n"),
            std::string::npos)
      << text.str();
  std::ostringstream json;
  write_json(rows, {}, json);
  EXPECT_NE(json.str().find("\"renewals_refused\":{\"holder\":\"web2:20:bb\",\"host\":\"web2\",\"since\":\"2026-11-18T"),
            std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find("\"user\":\"redisgo\",\"right\":\"+pexpire\"}"), std::string::npos) << json.str();
  // A value of another shape (set by hand) says nothing.
  NodeKey odd = held_by("");
  odd.refusal = "something else";
  rows = merge({node("n1", {{"k", odd}})}, 1);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].refusal);
  std::ostringstream quiet;
  write_json(rows, {}, quiet);
  EXPECT_NE(quiet.str().find("\"renewals_refused\":null"), std::string::npos) << quiet.str();
}

}  // namespace commands_list_test
