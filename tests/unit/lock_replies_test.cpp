// The scripts' replies as their parsers read them (lock/replies*.h): for each script, a good
// reply and each wrong shape, which must read as "not understood" (nullopt, kInvalid), never
// as a guess. tests/fuzz feeds the same parsers whatever bytes a server might send.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "lock/lease.h"
#include "lock/replies.h"
#include "lock/replies_admin.h"
#include "lock/replies_line.h"
#include "lock/replies_once.h"
#include "redis/reply.h"

namespace {

// A reply as the server would send it, parsed by hiredis's own reader.
redisgo::redis::Reply reply_of(const std::string& resp) {
  redisgo::redis::ReplyReader reader;
  EXPECT_TRUE(reader.feed(resp.data(), resp.size()));
  auto r = reader.next();
  EXPECT_TRUE(r) << resp;
  return redisgo::redis::Reply(std::move(r));
}

// RESP pieces: an integer, a bulk string, an array, nil, an error.
std::string I(long long v) { return ":" + std::to_string(v) + "\r\n"; }
std::string B(const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }
std::string A(std::initializer_list<std::string> items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (const auto& i : items) out += i;
  return out;
}
const std::string kNil = "$-1\r\n";
std::string E(const std::string& s) { return "-" + s + "\r\n"; }

// lib/once.lua's once_state: up 5 s, AOF on, Redis 8.0.2, a durable witness.
const std::string kState = A({I(5), I(1795600000000), I(1), B("8.0.2"), B("1795599900"), B("1"), B(""), B(""), B(""),
                              B(""), I(-1)});

}  // namespace

TEST(Replies, TheSemaphoreGrantNamesItsSlotKey) {
  using redisgo::lock::AcquireReply;
  auto g = redisgo::lock::parse_acquire_reply(reply_of("*3\r\n:1\r\n$2\r\n17\r\n$10\r\n{k}:slot:2\r\n").get());
  ASSERT_EQ(g.kind, AcquireReply::Kind::kGranted);
  EXPECT_EQ(g.token, 17u);
  EXPECT_EQ(g.slot_key, "{k}:slot:2");
  g = redisgo::lock::parse_acquire_reply(reply_of("*2\r\n:1\r\n$2\r\n17\r\n").get());
  ASSERT_EQ(g.kind, AcquireReply::Kind::kGranted);
  EXPECT_EQ(g.slot_key, "");
  // An empty slot key is no slot.
  g = redisgo::lock::parse_acquire_reply(reply_of("*3\r\n:1\r\n$2\r\n17\r\n$0\r\n\r\n").get());
  EXPECT_EQ(g.kind, AcquireReply::Kind::kInvalid);
  EXPECT_TRUE(g.set_key);
}

// A busy key names its holder by the holder id: a lease id's attempt is cut, and nothing of
// a pause's reason, which may end in "#<digits>" (found by the attack: "maint #42" was logged
// as "maint ").
TEST(Replies, ABusyKeyNamesTheHolderNotItsAttemptAndKeepsAPauseReasonWhole) {
  auto busy = redisgo::lock::parse_acquire_reply(reply_of(A({I(0), B("web:7:abc#12"), I(900)})).get());
  EXPECT_EQ(busy.holder, "web:7:abc");
  EXPECT_EQ(busy.lease, "web:7:abc#12");
  const std::string pause = "\x01pause:1795600000000:root@vm:maint #42";
  busy = redisgo::lock::parse_acquire_reply(reply_of(A({I(0), B(pause), I(900)})).get());
  EXPECT_EQ(busy.holder, pause);
  EXPECT_EQ(redisgo::lock::holder_of("\x01turn:web:7:abc"), "\x01turn:web:7:abc");
  EXPECT_EQ(redisgo::lock::holder_of("deploy#3x"), "deploy#3x");
  EXPECT_EQ(redisgo::lock::holder_of("web#7:x#2"), "web#7:x");
}

TEST(Replies, AClaimIsClaimedTakenNotOursOrNotUnderstood) {
  using redisgo::lock::ClaimReply;
  // {1, how it counted, fsync, the node's state} (lock/once_scripts.h kClaim).
  const std::string state =
      "*11\r\n:5\r\n:1795600000000\r\n:1\r\n$5\r\n8.0.2\r\n$10\r\n1795599900\r\n$1\r\n1\r\n"
      "$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n:-1\r\n";
  auto c = redisgo::lock::parse_claim_reply(reply_of("*4\r\n:1\r\n$7\r\nwitness\r\n:1\r\n" + state).get());
  ASSERT_EQ(c.kind, ClaimReply::Kind::kClaimed);
  EXPECT_EQ(c.how, redisgo::lock::Counted::kWitness);
  EXPECT_TRUE(c.fsync);
  EXPECT_EQ(c.state.uptime_s, 5);
  EXPECT_EQ(c.state.version, "8.0.2");
  EXPECT_EQ(c.state.witness, 1795599900);
  EXPECT_TRUE(c.state.witness_durable);
  EXPECT_EQ(c.state.adopted, 0);
  auto g = redisgo::lock::parse_claim_reply(reply_of("*2\r\n:2\r\n" + state).get());
  EXPECT_EQ(g.kind, ClaimReply::Kind::kGuarded);
  // The claim reply of an older version ({1}) is not understood by this one.
  EXPECT_EQ(redisgo::lock::parse_claim_reply(reply_of("*1\r\n:1\r\n").get()).kind, ClaimReply::Kind::kInvalid);
  EXPECT_EQ(redisgo::lock::parse_claim_reply(reply_of("*4\r\n:1\r\n$5\r\nmaybe\r\n:1\r\n" + state).get()).kind,
            ClaimReply::Kind::kInvalid);
  EXPECT_EQ(redisgo::lock::parse_claim_reply(reply_of("*1\r\n:-1\r\n").get()).kind, ClaimReply::Kind::kNotOurs);
  auto t = redisgo::lock::parse_claim_reply(reply_of("*5\r\n:0\r\n$1\r\nh\r\n$2\r\n42\r\n$3\r\n100\r\n$1\r\n3\r\n").get());
  ASSERT_EQ(t.kind, ClaimReply::Kind::kTaken);
  EXPECT_EQ(t.holder, "h");
  EXPECT_EQ(t.token, "42");
  EXPECT_EQ(t.start_ms, "100");
  EXPECT_EQ(t.status, "3");
  EXPECT_EQ(redisgo::lock::parse_claim_reply(reply_of(":1\r\n").get()).kind, ClaimReply::Kind::kInvalid);
  EXPECT_EQ(redisgo::lock::parse_claim_reply(reply_of("*2\r\n:1\r\n:1\r\n").get()).kind, ClaimReply::Kind::kInvalid);
  auto many = redisgo::lock::parse_read_claims_reply(
      reply_of("*2\r\n*4\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n*4\r\n$1\r\nh\r\n$1\r\n7\r\n$1\r\n9\r\n$0\r\n\r\n").get(), 2);
  ASSERT_TRUE(many);
  ASSERT_EQ(many->claims.size(), 2u);
  EXPECT_EQ(many->claims[0].holder, "");  // no claim there
  EXPECT_EQ(many->claims[1].holder, "h");
  EXPECT_EQ(many->claims[1].token, "7");
  EXPECT_EQ(many->claims[1].status, "");
  EXPECT_FALSE(redisgo::lock::parse_read_claims_reply(reply_of("*1\r\n:1\r\n").get(), 1));
}

TEST(Replies, AReleaseNotOursSaysWhatTheKeyHolds) {
  using redisgo::lock::parse_release_reply;
  // Gone.
  auto r = parse_release_reply(reply_of(":0\r\n").get());
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->released);
  EXPECT_EQ(r->holder, "");
  // Another holder's lease, and the fence counter then.
  r = parse_release_reply(reply_of("*3\r\n:0\r\n$7\r\nother:1\r\n$2\r\n42\r\n").get());
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->released);
  EXPECT_EQ(r->holder, "other:1");
  EXPECT_EQ(r->fence, "42");
  // A key of another type.
  r = parse_release_reply(reply_of("*4\r\n:0\r\n$0\r\n\r\n$0\r\n\r\n$4\r\nhash\r\n").get());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->other_type, "hash");
  // Released, as before.
  r = parse_release_reply(reply_of("*2\r\n:1\r\n:0\r\n").get());
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->released);
  EXPECT_EQ(r->holder, "");
  // Shapes that do not read.
  EXPECT_FALSE(parse_release_reply(reply_of("*2\r\n:0\r\n$1\r\nx\r\n").get()));
  EXPECT_FALSE(parse_release_reply(reply_of("*4\r\n:0\r\n$1\r\nx\r\n$0\r\n\r\n$4\r\nhash\r\n").get()));
  // A 100 KB holder is cut, with its size.
  const std::string big(100'000, 'h');
  r = parse_release_reply(reply_of("*3\r\n:0\r\n$100000\r\n" + big + "\r\n$1\r\n7\r\n").get());
  ASSERT_TRUE(r);
  EXPECT_LT(r->holder.size(), 300u);
  EXPECT_NE(r->holder.find("(100000 bytes)"), std::string::npos);
}

TEST(Replies, TheSemaphoreNamesSlotsOfAnotherTypeAfterItsReply) {
  using redisgo::lock::AcquireReply;
  // Busy (in line), with one slot of another type skipped.
  auto g = redisgo::lock::parse_acquire_reply(
      reply_of("*7\r\n:0\r\n$1\r\nh\r\n:900\r\n:1\r\n$2\r\n17\r\n:1\r\n*2\r\n$10\r\n{k}:slot:2\r\n$4\r\nhash\r\n")
          .get());
  ASSERT_EQ(g.kind, AcquireReply::Kind::kBusy) << g.why;
  EXPECT_EQ(g.holder, "h");
  EXPECT_EQ(g.position, 1);
  ASSERT_EQ(g.other_type_slots.size(), 1u);
  EXPECT_EQ(g.other_type_slots[0].first, "{k}:slot:2");
  EXPECT_EQ(g.other_type_slots[0].second, "hash");
  // Granted on another slot, with it.
  g = redisgo::lock::parse_acquire_reply(
      reply_of("*4\r\n:1\r\n$2\r\n17\r\n$10\r\n{k}:slot:1\r\n*2\r\n$10\r\n{k}:slot:2\r\n$4\r\nlist\r\n").get());
  ASSERT_EQ(g.kind, AcquireReply::Kind::kGranted) << g.why;
  EXPECT_EQ(g.slot_key, "{k}:slot:1");
  ASSERT_EQ(g.other_type_slots.size(), 1u);
  // A list that does not read (odd, empty, not strings) is not understood.
  EXPECT_EQ(redisgo::lock::parse_acquire_reply(reply_of("*3\r\n:1\r\n$2\r\n17\r\n*1\r\n$1\r\nk\r\n").get()).kind,
            AcquireReply::Kind::kInvalid);
  EXPECT_EQ(redisgo::lock::parse_acquire_reply(reply_of("*3\r\n:1\r\n$2\r\n17\r\n*0\r\n").get()).kind,
            AcquireReply::Kind::kInvalid);
  EXPECT_EQ(redisgo::lock::parse_acquire_reply(reply_of("*3\r\n:1\r\n$2\r\n17\r\n*2\r\n:1\r\n:2\r\n").get()).kind,
            AcquireReply::Kind::kInvalid);
}

TEST(Replies, TheRestartGuardHoldsBackOrCannotApply) {
  using redisgo::lock::AcquireReply;
  auto g = redisgo::lock::parse_acquire_reply(reply_of("*2\r\n:2\r\n:1500\r\n").get());
  ASSERT_EQ(g.kind, AcquireReply::Kind::kGuarded);
  EXPECT_EQ(g.guard_ms, 1500);
  EXPECT_FALSE(g.set_key);
  // A wait that is not positive, or of the wrong shape, is not understood.
  EXPECT_EQ(redisgo::lock::parse_acquire_reply(reply_of("*2\r\n:2\r\n:0\r\n").get()).kind, AcquireReply::Kind::kInvalid);
  EXPECT_EQ(redisgo::lock::parse_acquire_reply(reply_of("*1\r\n:2\r\n").get()).kind, AcquireReply::Kind::kInvalid);
  EXPECT_EQ(redisgo::lock::parse_acquire_reply(reply_of("*3\r\n:2\r\n:5\r\n:5\r\n").get()).kind,
            AcquireReply::Kind::kInvalid);
  // Granted where INFO was refused: the plain script's "" slot key, the semaphore's slot key.
  g = redisgo::lock::parse_acquire_reply(reply_of("*4\r\n:1\r\n$2\r\n17\r\n$0\r\n\r\n$6\r\nnoinfo\r\n").get());
  ASSERT_EQ(g.kind, AcquireReply::Kind::kGranted);
  EXPECT_TRUE(g.unguarded);
  EXPECT_EQ(g.slot_key, "");
  g = redisgo::lock::parse_acquire_reply(
      reply_of("*4\r\n:1\r\n$2\r\n17\r\n$10\r\n{k}:slot:2\r\n$6\r\nnoinfo\r\n").get());
  ASSERT_EQ(g.kind, AcquireReply::Kind::kGranted);
  EXPECT_TRUE(g.unguarded);
  EXPECT_EQ(g.slot_key, "{k}:slot:2");
  g = redisgo::lock::parse_acquire_reply(reply_of("*2\r\n:1\r\n$2\r\n17\r\n").get());
  EXPECT_FALSE(g.unguarded);
  // Any other note is not understood (but the key may be ours: the undo covers it).
  g = redisgo::lock::parse_acquire_reply(reply_of("*4\r\n:1\r\n$2\r\n17\r\n$0\r\n\r\n$3\r\nodd\r\n").get());
  EXPECT_EQ(g.kind, AcquireReply::Kind::kInvalid);
  EXPECT_TRUE(g.set_key);
}

TEST(Replies, InspectCarriesTheUptimeWhenItHasIt) {
  auto i = redisgo::lock::parse_inspect_reply(reply_of("*5\r\n:0\r\n$0\r\n\r\n:-2\r\n$0\r\n\r\n:7\r\n").get());
  ASSERT_TRUE(i);
  EXPECT_EQ(i->uptime_s, 7);
  i = redisgo::lock::parse_inspect_reply(reply_of("*5\r\n:0\r\n$0\r\n\r\n:-2\r\n$0\r\n\r\n:-1\r\n").get());
  ASSERT_TRUE(i);
  EXPECT_EQ(i->uptime_s, -1);  // INFO refused
  i = redisgo::lock::parse_inspect_reply(reply_of("*4\r\n:0\r\n$0\r\n\r\n:-2\r\n$0\r\n\r\n").get());
  ASSERT_TRUE(i);
  EXPECT_EQ(i->uptime_s, -1);
  EXPECT_FALSE(redisgo::lock::parse_inspect_reply(reply_of("*5\r\n:0\r\n$0\r\n\r\n:-2\r\n$0\r\n\r\n$1\r\nx\r\n").get()));
}

namespace lock = redisgo::lock;

TEST(Replies, AFlagIsOneOrZero) {
  // undo, finish_claim and drop_adopt (UndoReply, FinishClaimReply, DropAdoptReply).
  auto f = lock::parse_flag_reply(reply_of(I(1)).get());
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->ours);
  f = lock::parse_flag_reply(reply_of(I(0)).get());
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->ours);
  for (const std::string& bad : {I(2), I(-1), B("1"), A({I(1)}), kNil}) {
    EXPECT_FALSE(lock::parse_flag_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, ARenewalIsRenewedRepairedNotOursOrAnotherType) {
  using Result = lock::RenewReply::Result;
  const std::pair<long long, Result> good[] = {
      {0, Result::kNotOurs}, {1, Result::kRenewed}, {2, Result::kRepaired}, {3, Result::kOtherType}};
  for (const auto& [value, result] : good) {
    auto r = lock::parse_renew_reply(reply_of(I(value)).get());
    ASSERT_TRUE(r) << value;
    EXPECT_EQ(r->result, result) << value;
  }
  for (const std::string& bad : {I(4), I(-1), B("1"), A({I(1)}), kNil}) {
    EXPECT_FALSE(lock::parse_renew_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, ARaiseIsRaisedNotOursOrShared) {
  using Result = lock::RaiseFenceReply::Result;
  EXPECT_EQ(lock::parse_raise_fence_reply(reply_of(I(0)).get())->result, Result::kNotOurs);
  EXPECT_EQ(lock::parse_raise_fence_reply(reply_of(I(1)).get())->result, Result::kRaised);
  EXPECT_EQ(lock::parse_raise_fence_reply(reply_of(I(2)).get())->result, Result::kShared);
  for (const std::string& bad : {I(3), I(-1), B("2"), A({I(2)}), kNil}) {
    EXPECT_FALSE(lock::parse_raise_fence_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, ThePlainReleaseIsAnIntegerTheFairOneAnArray) {
  auto r = lock::parse_release_reply(reply_of(I(1)).get());
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->released);
  EXPECT_TRUE(r->published);
  r = lock::parse_release_reply(reply_of(I(2)).get());
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->released);
  EXPECT_FALSE(r->published);
  r = lock::parse_release_reply(reply_of(A({I(3), I(2)})).get());
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->released);
  EXPECT_TRUE(r->line_broken);
  EXPECT_EQ(r->unfair_listeners, 2);
  for (const std::string& bad : {I(3), I(-1), B("1"), A({I(1)}), A({I(4), I(0)}), A({I(1), I(-1)}), A({I(1), B("0")}),
                                 A({I(0), B("h"), B(""), B(""), B("")}), kNil}) {
    EXPECT_FALSE(lock::parse_release_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, TheLineReadsItsEntriesTheirTicketsAndListeners) {
  const std::string entries = A({B("a"), B("1767225600250000"), B("b"), B("1767225600250001")});
  auto l = lock::parse_read_line_reply(reply_of(A({I(2), entries, I(3), A({I(1), I(0)})})).get());
  ASSERT_TRUE(l);
  EXPECT_EQ(l->length, 2);
  EXPECT_EQ(l->outside, 3);
  ASSERT_EQ(l->entries.size(), 2u);
  EXPECT_EQ(l->entries[0].holder, "a");
  EXPECT_EQ(l->entries[0].ticket, 1767225600250000u);
  EXPECT_EQ(l->entries[0].listeners, 1);
  EXPECT_EQ(l->entries[1].ticket, 1767225600250001u);
  EXPECT_EQ(l->entries[1].listeners, 0);
  // An empty line; PUBSUB refused (-1 each).
  l = lock::parse_read_line_reply(reply_of(A({I(0), A({}), I(-1), A({})})).get());
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->entries.empty());
  EXPECT_EQ(l->outside, -1);
  // A score written by hand that no ticket can be is read, as no ticket (0).
  for (const char* score : {"-5", "inf", "-inf", "1e300", "1e19", "9007199254740992"}) {
    l = lock::parse_read_line_reply(reply_of(A({I(1), A({B("a"), B(score)}), I(0), A({I(1)})})).get());
    ASSERT_TRUE(l) << score;
    EXPECT_EQ(l->entries[0].ticket, 0u) << score;
  }
  // A member of 100 KB is shown cut.
  l = lock::parse_read_line_reply(
      reply_of(A({I(1), A({B(std::string(100'000, 'm')), B("7")}), I(0), A({I(1)})})).get());
  ASSERT_TRUE(l);
  EXPECT_LT(l->entries[0].holder.size(), 1000u);
  const std::string bad[] = {
      A({I(2), entries, I(3)}),                               // without the listeners
      A({I(2), entries, I(3), A({I(1)})}),                    // listeners for one entry of two
      A({I(1), A({B("a")}), I(0), A({})}),                    // an entry without its score
      A({I(1), A({I(1), B("7")}), I(0), A({I(1)})}),          // a holder that is no string
      A({I(1), A({B("a"), B("seven")}), I(0), A({I(1)})}),    // a score that is no number
      A({I(1), A({B("a"), B("7")}), I(0), A({B("1")})}),      // listeners that are no integer
      A({B("2"), entries, I(3), A({I(1), I(0)})}),            // a length that is no integer
      A({I(2), entries, kNil, A({I(1), I(0)})}),              // outside nil
      A({I(2), B("x"), I(3), A({})}),                         // entries that are no array
      I(2), kNil,
  };
  for (const auto& b : bad) EXPECT_FALSE(lock::parse_read_line_reply(reply_of(b).get())) << b;
}

TEST(Replies, APassedTurnIsHandedOnPublishedOrNotOurs) {
  using Result = lock::PassTurnReply::Result;
  EXPECT_EQ(lock::parse_pass_turn_reply(reply_of(I(0)).get())->result, Result::kNotOurs);
  EXPECT_EQ(lock::parse_pass_turn_reply(reply_of(I(1)).get())->result, Result::kHandedOn);
  EXPECT_EQ(lock::parse_pass_turn_reply(reply_of(I(2)).get())->result, Result::kPublished);
  for (const std::string& bad : {I(3), I(-1), B("1"), A({I(1)}), kNil}) {
    EXPECT_FALSE(lock::parse_pass_turn_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, PauseAndResumeSayWhetherTheWaitersWereWoken) {
  auto p = lock::parse_pause_reply(reply_of(A({I(1), I(1)})).get());
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->woken);
  p = lock::parse_pause_reply(reply_of(A({I(1), I(0)})).get());
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->woken);
  for (const std::string& bad : {A({I(0), I(1)}), A({I(1), I(2)}), A({I(1)}), A({I(1), I(1), I(1)}), A({I(1), B("1")}),
                                 I(1), kNil}) {
    EXPECT_FALSE(lock::parse_pause_reply(reply_of(bad).get())) << bad;
  }
  auto r = lock::parse_resume_reply(reply_of(A({I(1), I(1)})).get());
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->was_paused);
  EXPECT_TRUE(r->woken);
  r = lock::parse_resume_reply(reply_of(A({I(0), I(0)})).get());
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->was_paused);
  EXPECT_FALSE(r->woken);
  for (const std::string& bad : {A({I(2), I(1)}), A({I(1), I(-1)}), A({I(1)}), A({B("1"), I(1)}), I(1), kNil}) {
    EXPECT_FALSE(lock::parse_resume_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, APauseRecordReadsItsFields) {
  auto p = lock::parse_read_pause_reply(
      reply_of(A({I(60000), B("alice@ops1"), B("schema\nmigration"), B("1767225600000"), B("1767229200000")})).get());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pttl_ms, 60000);
  EXPECT_EQ(p->by, "alice@ops1");
  EXPECT_EQ(p->reason, "schema\\nmigration");  // shown: escaped
  EXPECT_EQ(p->since_ms, 1767225600000);
  EXPECT_EQ(p->until_ms, 1767229200000);
  p = lock::parse_read_pause_reply(reply_of(A({I(-2), B(""), B(""), B(""), B("")})).get());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pttl_ms, -2);
  // Times written by hand that are no counts read as none.
  p = lock::parse_read_pause_reply(reply_of(A({I(5), B("b"), B("r"), B("soon"), B("-1")})).get());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->since_ms, 0);
  EXPECT_EQ(p->until_ms, 0);
  for (const std::string& bad : {A({I(5), B("b"), B("r"), B("1")}), A({B("5"), B("b"), B("r"), B("1"), B("2")}),
                                 A({I(5), I(1), B("r"), B("1"), B("2")}), A({I(5), B("b"), B("r"), B("1"), kNil}),
                                 A({I(5), B("b"), B("r"), B("1"), E("ERR x")}), I(-2), kNil}) {
    EXPECT_FALSE(lock::parse_read_pause_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, APublishCountsItsReceivers) {
  auto p = lock::parse_publish_reply(reply_of(I(3)).get());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->receivers, 3);
  EXPECT_EQ(lock::parse_publish_reply(reply_of(I(0)).get())->receivers, 0);
  for (const std::string& bad : {I(-1), B("3"), A({I(3)}), kNil}) {
    EXPECT_FALSE(lock::parse_publish_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, TheRightsProbesNameTheCommandRefused) {
  auto p = lock::parse_probe_rights_reply(reply_of(A({B(""), B("")})).get());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->command, "");
  p = lock::parse_probe_rights_reply(reply_of(A({B("PEXPIRE"), B("NOPERM ...")})).get());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->command, "PEXPIRE");
  EXPECT_EQ(p->error, "NOPERM ...");
  auto c = lock::parse_check_rights_reply(reply_of(A({B("the check script"), B("boom")})).get());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->command, "the check script");
  for (const std::string& bad : {A({B("")}), A({B(""), B(""), B("")}), A({I(1), B("")}), A({B("SET"), kNil}), B(""),
                                 kNil}) {
    EXPECT_FALSE(lock::parse_probe_rights_reply(reply_of(bad).get())) << bad;
    EXPECT_FALSE(lock::parse_check_rights_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, TheRefusalNoteComesWithItsTtlOrWhyItCannotBeRead) {
  auto r = lock::parse_read_refusal_reply(reply_of(A({B("h\n1\nu\n+pexpire\nERR"), I(500), B("")})).get());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->note, "h\n1\nu\n+pexpire\nERR");  // as stored: parse_refusal_note reads it
  EXPECT_EQ(r->pttl_ms, 500);
  r = lock::parse_read_refusal_reply(reply_of(A({B(""), I(-2), B("NOPERM no key")})).get());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error, "NOPERM no key");
  for (const std::string& bad : {A({B(""), I(-2)}), A({B(""), B("-2"), B("")}), A({I(0), I(-2), B("")}), B(""), kNil}) {
    EXPECT_FALSE(lock::parse_read_refusal_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, SlotsBeyondTheLimitAreACountOrUnknown) {
  EXPECT_EQ(lock::parse_slots_beyond_reply(reply_of(I(0)).get())->held, 0);
  EXPECT_EQ(lock::parse_slots_beyond_reply(reply_of(I(3)).get())->held, 3);
  EXPECT_EQ(lock::parse_slots_beyond_reply(reply_of(I(-1)).get())->held, -1);  // the user may not ask
  for (const std::string& bad : {I(-2), I(65), B("3"), A({I(3)}), kNil}) {
    EXPECT_FALSE(lock::parse_slots_beyond_reply(reply_of(bad).get())) << bad;
  }
}

TEST(Replies, ListReadsOneKeyWhole) {
  const std::string pause = A({B("alice"), B("deploy"), B("1767225600000"), B("1767229200000")});
  const std::string slots = A({B("2"), B("h2"), I(900), B("5"), B(std::string(10'000, 'x')), I(-1)});
  auto k = lock::parse_list_key_reply(
      reply_of(A({B("h1"), I(1500), B("1767225600250000"), I(2), I(60000), pause, slots, B("note"),
                  A({B("3"), B("hash")})})).get());
  ASSERT_TRUE(k);
  EXPECT_EQ(k->holder, "h1");
  EXPECT_EQ(k->pttl_ms, 1500);
  EXPECT_EQ(k->fence, "1767225600250000");
  EXPECT_EQ(k->line_length, 2);
  EXPECT_EQ(k->pause_pttl_ms, 60000);
  EXPECT_EQ(k->pause.by, "alice");
  EXPECT_EQ(k->pause.reason, "deploy");
  EXPECT_EQ(k->pause.since_ms, "1767225600000");
  EXPECT_EQ(k->pause.until_ms, "1767229200000");
  ASSERT_EQ(k->slots.size(), 2u);
  EXPECT_EQ(k->slots[0].slot, 2);
  EXPECT_EQ(k->slots[0].holder, "h2");
  EXPECT_EQ(k->slots[0].pttl_ms, 900);
  EXPECT_EQ(k->slots[1].slot, 5);
  EXPECT_LT(k->slots[1].holder.size(), 300u);  // cut, with its size
  EXPECT_EQ(k->note, "note");
  ASSERT_EQ(k->other_type.size(), 1u);
  EXPECT_EQ(k->other_type[0].slot, 3);
  EXPECT_EQ(k->other_type[0].type, "hash");
  const std::string none = A({B(""), B(""), B(""), B("")});
  k = lock::parse_list_key_reply(reply_of(A({B(""), I(-2), B(""), I(-1), I(-2), none, A({}), B(""), A({})})).get());
  ASSERT_TRUE(k);
  EXPECT_EQ(k->holder, "");
  EXPECT_EQ(k->line_length, -1);
  EXPECT_TRUE(k->slots.empty());
  auto with = [&](const std::string& p, const std::string& s) {
    return A({B(""), I(-2), B(""), I(0), I(-2), p, s, B(""), A({})});
  };
  const std::string bad[] = {
      A({B(""), I(-2), B(""), I(0), I(-2), none, A({})}),   // without the note
      A({B(""), I(-2), B(""), I(0), I(-2), none, A({}), B("")}),  // without the other types
      A({B(""), I(-2), B(""), I(0), I(-2), none, A({}), B(""), A({B("0"), B("hash")})}),  // slot 0: the lease key
      A({B(""), I(-2), B(""), I(0), I(-2), none, A({}), B(""), A({B("2")})}),  // a slot without its type
      with(A({B(""), B(""), B("")}), A({})),                // a pause of three fields
      with(A({B(""), I(0), B(""), B("")}), A({})),          // a pause field that is no string
      with(none, A({B("2"), B("h")})),                      // a slot without its pttl
      with(none, A({B("0"), B("h"), I(1)})),                // slot 0 is the lease key
      with(none, A({B("64"), B("h"), I(1)})),               // past the last slot
      with(none, A({B("x"), B("h"), I(1)})),                // a slot that is no number
      with(none, A({B("2"), B("h"), B("1")})),              // a pttl that is no integer
      with(none, B("")),                                    // slots that are no array
      A({I(0), I(-2), B(""), I(0), I(-2), none, A({}), B(""), A({})}),  // a holder that is no string
      A({B(""), B("-2"), B(""), I(0), I(-2), none, A({}), B(""), A({})}),  // a pttl that is no integer
      B(""), kNil,
  };
  for (const auto& b : bad) EXPECT_FALSE(lock::parse_list_key_reply(reply_of(b).get())) << b;
}

TEST(Replies, ReadOnceReadsTheStateAndEachClaim) {
  auto o = lock::parse_read_once_reply(
      reply_of(A({kState, A({B(""), B(""), B(""), B("")}), A({B("h"), B("7"), B("100"), B("0")})})).get(), 2);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->state.uptime_s, 5);
  EXPECT_EQ(o->state.aof, 1);
  EXPECT_EQ(o->state.witness, 1795599900);
  ASSERT_EQ(o->claims.size(), 2u);
  EXPECT_FALSE(o->claims[0]);  // no claim
  ASSERT_TRUE(o->claims[1]);
  EXPECT_EQ(o->claims[1]->holder, "h");
  EXPECT_EQ(o->claims[1]->status, "0");
  o = lock::parse_read_once_reply(reply_of(A({kState})).get(), 0);
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->claims.empty());
  const std::string claim = A({B("h"), B("7"), B("100"), B("")});
  EXPECT_FALSE(lock::parse_read_once_reply(reply_of(A({kState, claim})).get(), 2));  // one claim of two
  EXPECT_FALSE(lock::parse_read_once_reply(reply_of(A({kState, claim, claim})).get(), 1));
  EXPECT_FALSE(lock::parse_read_once_reply(reply_of(A({A({I(5)}), claim})).get(), 1));  // a state of one field
  EXPECT_FALSE(lock::parse_read_once_reply(reply_of(A({kState, A({B("h"), B("7"), B("100")})})).get(), 1));
  EXPECT_FALSE(lock::parse_read_once_reply(reply_of(A({kState, A({B("h"), I(7), B("100"), B("")})})).get(), 1));
  EXPECT_FALSE(lock::parse_read_once_reply(reply_of(kNil).get(), 0));
  lock::OnceNode n;
  EXPECT_FALSE(lock::parse_once_state(reply_of(A({I(5), I(1), I(1)})).get(), n));
}

TEST(Replies, AnAdoptionIsWrittenOrFindsAClaim) {
  auto a = lock::parse_adopt_reply(reply_of(A({I(1), I(1767225600123)})).get());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, lock::AdoptReply::Kind::kAdopted);
  EXPECT_EQ(a->adopted_ms, 1767225600123);
  a = lock::parse_adopt_reply(reply_of(A({I(0), B("h"), B("7"), B("100"), B("")})).get());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, lock::AdoptReply::Kind::kTaken);
  EXPECT_EQ(a->holder, "h");
  EXPECT_EQ(a->token, "7");
  EXPECT_EQ(a->start_ms, "100");
  for (const std::string& bad : {A({I(1), I(0)}), A({I(1), B("1767225600123")}), A({I(1)}), A({I(0), B("h")}),
                                 A({I(0), B("h"), B("7"), B("100"), I(0)}), A({I(2), I(1)}), A({B("1"), I(5)}), I(1),
                                 kNil}) {
    EXPECT_FALSE(lock::parse_adopt_reply(reply_of(bad).get())) << bad;
  }
}

// What no script sends: nothing at all, nil, an error, an array of nils. Every parser reads
// each as not understood.
TEST(Replies, NothingAndNilAreNotUnderstoodByAnyParser) {
  std::vector<redisgo::redis::Reply> odd;
  for (const std::string& r : {kNil, E("ERR x"), A({kNil, kNil}), A({kNil, kNil, kNil, kNil, kNil}), A({})}) {
    odd.push_back(reply_of(r));
  }
  std::vector<const redisReply*> replies{nullptr};
  for (const auto& r : odd) replies.push_back(r.get());
  for (const redisReply* r : replies) {
    EXPECT_EQ(lock::parse_acquire_reply(r).kind, lock::AcquireReply::Kind::kInvalid);
    EXPECT_FALSE(lock::parse_flag_reply(r));
    EXPECT_FALSE(lock::parse_renew_reply(r));
    EXPECT_FALSE(lock::parse_raise_fence_reply(r));
    EXPECT_FALSE(lock::parse_release_reply(r));
    EXPECT_FALSE(lock::parse_inspect_reply(r));
    EXPECT_FALSE(lock::parse_read_line_reply(r));
    EXPECT_FALSE(lock::parse_pass_turn_reply(r));
    EXPECT_FALSE(lock::parse_pause_reply(r));
    EXPECT_FALSE(lock::parse_resume_reply(r));
    EXPECT_FALSE(lock::parse_read_pause_reply(r));
    EXPECT_FALSE(lock::parse_publish_reply(r));
    EXPECT_FALSE(lock::parse_probe_rights_reply(r));
    EXPECT_FALSE(lock::parse_read_refusal_reply(r));
    EXPECT_FALSE(lock::parse_slots_beyond_reply(r));
    EXPECT_FALSE(lock::parse_list_key_reply(r));
    EXPECT_EQ(lock::parse_claim_reply(r).kind, lock::ClaimReply::Kind::kInvalid);
    EXPECT_FALSE(lock::parse_read_claims_reply(r, 2));
    EXPECT_FALSE(lock::parse_read_once_reply(r, 1));
    EXPECT_FALSE(lock::parse_adopt_reply(r));
  }
}
