#include "simulator/checker.h"

#include <algorithm>

namespace redisgo::simulator {

void Checker::add_client(std::string name, std::function<HolderView()> view) {
  clients_.push_back(Client{std::move(name), std::move(view), false});
}

void Checker::fail(std::string what) {
  if (violation_) return;
  violation_ = "at " + format_time(world_.now()) + ": " + what;
  world_.trace("checker", "VIOLATION " + what);
  world_.halt();
}

int Checker::holders_now(std::vector<HolderView>& views) const {
  views.clear();
  int n = 0;
  for (const auto& c : clients_) {
    views.push_back(c.view());
    if (counts(views.back())) ++n;
  }
  return n;
}

void Checker::holding_began(int c) {
  std::vector<HolderView> views;
  const int n = holders_now(views);
  const HolderView& me = views[static_cast<std::size_t>(c)];
  if (!counts(me)) return;
  ++holdings_;
  const std::string who = clients_[static_cast<std::size_t>(c)].name + " (token " + std::to_string(me.token) +
                          ", slot " + std::to_string(me.slot) + ")";
  world_.trace("checker", who + " holds; " + std::to_string(n) + " holding now");
  auto describe_holders = [&] {
    std::string s;
    for (std::size_t i = 0; i < views.size(); ++i) {
      if (!counts(views[i])) continue;
      s += " " + clients_[i].name + " (token " + std::to_string(views[i].token) + ", slot " +
           std::to_string(views[i].slot) + ")";
    }
    return s;
  };
  if (n > limit_) {
    fail("mutual exclusion: " + std::to_string(n) + " clients run a child under a valid local deadline, limit " +
         std::to_string(limit_) + ":" + describe_holders());
    return;
  }
  for (std::size_t i = 0; i < views.size(); ++i) {
    if (i == static_cast<std::size_t>(c) || !counts(views[i])) continue;
    if (views[i].slot == me.slot) {
      fail("mutual exclusion: two holders of slot " + std::to_string(me.slot) + ":" + describe_holders());
      return;
    }
    if (views[i].token == me.token) {
      fail("tokens: concurrent holders share token " + std::to_string(me.token) + ":" + describe_holders());
      return;
    }
  }
  bool known = false;  // this lease held before (a child restarted under it)
  for (const auto& h : history_) {
    if (h.slot != me.slot) continue;
    if (h.holder == me.holder && h.token == me.token) {
      known = true;
      continue;
    }
    if (h.token >= me.token) {
      fail("tokens: " + who + " holds after " + h.holder + " held slot " + std::to_string(h.slot) + " with token " +
           std::to_string(h.token) + " (from " + format_time(h.at) + ")");
      return;
    }
  }
  if (!known) history_.push_back(Holding{world_.now(), me.token, me.slot, me.holder});
}

void Checker::lease_deleted(const std::string& lease) { excused_[lease] = world_.now(); }

void Checker::renewal_confirmed(int c, Time sent) {
  const HolderView v = clients_[static_cast<std::size_t>(c)].view();
  const auto it = excused_.find(v.lease);
  if (it == excused_.end() || sent < it->second) return;
  excused_.erase(it);
  world_.trace("checker", clients_[static_cast<std::size_t>(c)].name + " renewed a lease whose key was deleted");
  holding_began(c);
}

void Checker::waiting(int c, bool on) {
  Client& client = clients_[static_cast<std::size_t>(c)];
  if (client.waiting == on) return;
  client.waiting = on;
  waiters_ += on ? 1 : -1;
}

void Checker::acquired(int) {
  last_acquired_ = world_.now();
  needy_since_ = kNever;
}

void Checker::check_liveness() {
  const Time now = world_.now();
  if (now < quiet_from_ || violation_) return;
  int leading = 0;
  for (const auto& c : clients_) leading += c.view().leading ? 1 : 0;
  const bool needy = waiters_ > 0 && leading < limit_;
  if (!needy) {
    needy_since_ = kNever;
    return;
  }
  if (needy_since_ == kNever) needy_since_ = std::max(now, quiet_from_);
  if (now - needy_since_ > bound_) {
    fail("liveness: a slot has been free (" + std::to_string(leading) + " of " + std::to_string(limit_) +
         " leading) with " + std::to_string(waiters_) + " live waiter(s) since " + format_time(needy_since_) +
         ", longer than the bound of " + format_time(bound_) + " s");
  }
}

}  // namespace redisgo::simulator
