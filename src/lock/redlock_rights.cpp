// RedlockBackend: renewals refused (redisgo_task(1) "Renewals refused"): the probe of the
// rights the renewals need, and the note it leaves beside the key.
#include <algorithm>

#include "lock/redlock.h"
#include "lock/scripts.h"

namespace redisgo::lock {

RightsProbe RedlockBackend::probe_rights(const std::vector<std::string>& commands, const std::string& note_head,
                                         Millis note_ttl) {
  std::vector<std::string> args{keys_.probe(), keys_.refused(), note_head,
                                std::to_string(std::max<Millis::rep>(1, note_ttl.count())), options_.holder};
  args.insert(args.end(), commands.begin(), commands.end());
  const auto calls = round(kProbeRights, {keys_.key}, args, true);
  RightsProbe out;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto& c = calls[i];
    if (!c || !c->ok() || !c->reply().is_array() || c->reply().size() != 2) {
      if (!c || !c->ok()) {
        out.errors.push_back(error_of(i, c));
      } else {
        out.errors.push_back({nodes_[i].name, redis::Fault::kProtocol,
                              nodes_[i].conn->describe() + ": unexpected reply to the rights probe"});
      }
      continue;
    }
    const std::string command = redis::as_string(c->reply().element(0)).value_or("");
    if (command.empty()) {
      ++out.allowed;
    } else if (out.command.empty()) {
      out.command = command;
      out.error = nodes_[i].conn->describe() + ": " + redis::as_string(c->reply().element(1)).value_or("");
    }
  }
  return out;
}

std::optional<RefusalNote> RedlockBackend::read_refusal() {
  std::optional<RefusalNote> newest;
  for (const auto& c : round(kReadRefusal, {keys_.key}, {keys_.refused()}, true)) {
    if (!c || !c->ok() || !c->reply().is_array() || c->reply().size() != 3) continue;
    auto note = parse_refusal_note(redis::as_string(c->reply().element(0)).value_or(""));
    if (note && (!newest || note->since_ms > newest->since_ms)) newest = std::move(note);
  }
  return newest;
}

}  // namespace redisgo::lock
