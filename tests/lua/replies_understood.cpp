#include "lua/replies_understood.h"

#include <functional>
#include <map>

#include "lock/replies.h"
#include "lock/replies_admin.h"
#include "lock/replies_line.h"
#include "lock/replies_once.h"
#include "lock/scripts.h"
#include "redis/reply.h"

namespace redisgo::luatable {
namespace {

/// `r` as a server sends it (RESP2).
std::string wire(const sim::Resp& r) {
  using Kind = sim::Resp::Kind;
  switch (r.kind) {
    case Kind::kNil: return "$-1\r\n";
    case Kind::kInt: return ":" + std::to_string(r.integer) + "\r\n";
    case Kind::kStatus: return "+" + r.text + "\r\n";
    case Kind::kError: return "-" + r.text + "\r\n";
    case Kind::kBulk: return "$" + std::to_string(r.text.size()) + "\r\n" + r.text + "\r\n";
    case Kind::kArray: {
      std::string out = "*" + std::to_string(r.items.size()) + "\r\n";
      for (const auto& i : r.items) out += wire(i);
      return out;
    }
  }
  return {};
}

using Parser = std::function<bool(const redisReply*, std::size_t keys)>;

template <class Parse>
Parser optional_of(Parse parse) {
  return [parse](const redisReply* r, std::size_t) { return parse(r).has_value(); };
}

/// Each script's parser, by the script.
const std::map<const redis::Script*, Parser>& parsers() {
  static const std::map<const redis::Script*, Parser> kParsers{
      {&lock::kAcquireFair, [](const redisReply* r, std::size_t) {
         return lock::parse_acquire_reply(r).kind != lock::AcquireReply::Kind::kInvalid;
       }},
      {&lock::kAcquireSlotFair, [](const redisReply* r, std::size_t) {
         return lock::parse_acquire_reply(r).kind != lock::AcquireSlotReply::Kind::kInvalid;
       }},
      {&lock::kRenew, optional_of(lock::parse_renew_reply)},
      {&lock::kRelease, optional_of(lock::parse_release_reply)},
      {&lock::kReleaseFair, optional_of(lock::parse_release_reply)},
      {&lock::kUndo, optional_of(lock::parse_flag_reply)},
      {&lock::kRaiseFence, optional_of(lock::parse_raise_fence_reply)},
      {&lock::kInspect, optional_of(lock::parse_inspect_reply)},
      {&lock::kPublish, optional_of(lock::parse_publish_reply)},
      {&lock::kPassTurn, optional_of(lock::parse_pass_turn_reply)},
      {&lock::kReadLine, optional_of(lock::parse_read_line_reply)},
      {&lock::kPause, optional_of(lock::parse_pause_reply)},
      {&lock::kResume, optional_of(lock::parse_resume_reply)},
      {&lock::kReadPause, optional_of(lock::parse_read_pause_reply)},
      {&lock::kProbeRights, optional_of(lock::parse_probe_rights_reply)},
      {&lock::kReadRefusal, optional_of(lock::parse_read_refusal_reply)},
      {&lock::kCheckRights, optional_of(lock::parse_check_rights_reply)},
      {&lock::kSlotsBeyond, optional_of(lock::parse_slots_beyond_reply)},
      {&lock::kListKey, optional_of(lock::parse_list_key_reply)},
      {&lock::kClaim, [](const redisReply* r, std::size_t) {
         return lock::parse_claim_reply(r).kind != lock::ClaimReply::Kind::kInvalid;
       }},
      {&lock::kFinishClaim, optional_of(lock::parse_flag_reply)},
      {&lock::kReadClaims, [](const redisReply* r, std::size_t keys) {
         return lock::parse_read_claims_reply(r, keys).has_value();
       }},
      {&lock::kReadOnce, [](const redisReply* r, std::size_t keys) {
         return keys > 0 && lock::parse_read_once_reply(r, keys - 1).has_value();  // KEYS: the witness, the claims
       }},
      {&lock::kAdopt, optional_of(lock::parse_adopt_reply)},
      {&lock::kDropAdopt, optional_of(lock::parse_flag_reply)},
  };
  return kParsers;
}

}  // namespace

std::optional<bool> understood(const std::string& source, const sim::Resp& reply, std::size_t keys) {
  for (const auto& [script, parse] : parsers()) {
    if (script->source != source) continue;
    const std::string bytes = wire(reply);
    redis::ReplyReader reader;
    if (!reader.feed(bytes.data(), bytes.size())) return false;
    const redis::Reply r(reader.next());
    return r && parse(r.get(), keys);
  }
  return std::nullopt;
}

}  // namespace redisgo::luatable
