// Names: enum and signal names both ways, and the suggestion for a misspelt name.
#include <algorithm>
#include <cctype>

#include "config/config.h"
#include "config/detail.h"

namespace redisgo::config {
namespace detail {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

struct SignalName {
  int number;
  const char* name;
};

// Linux numbers come from the macros; the first name of a number is its canonical one.
constexpr SignalName kSignals[] = {
    {SIGHUP, "SIGHUP"},     {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"},   {SIGILL, "SIGILL"},
    {SIGTRAP, "SIGTRAP"},   {SIGABRT, "SIGABRT"},     {SIGIOT, "SIGIOT"},     {SIGBUS, "SIGBUS"},
    {SIGFPE, "SIGFPE"},     {SIGKILL, "SIGKILL"},     {SIGUSR1, "SIGUSR1"},   {SIGSEGV, "SIGSEGV"},
    {SIGUSR2, "SIGUSR2"},   {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"},   {SIGTERM, "SIGTERM"},
#ifdef SIGSTKFLT
    {SIGSTKFLT, "SIGSTKFLT"},
#endif
    {SIGCHLD, "SIGCHLD"},   {SIGCONT, "SIGCONT"},     {SIGSTOP, "SIGSTOP"},   {SIGTSTP, "SIGTSTP"},
    {SIGTTIN, "SIGTTIN"},   {SIGTTOU, "SIGTTOU"},     {SIGURG, "SIGURG"},     {SIGXCPU, "SIGXCPU"},
    {SIGXFSZ, "SIGXFSZ"},   {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"},   {SIGWINCH, "SIGWINCH"},
    {SIGIO, "SIGIO"},       {SIGPOLL, "SIGPOLL"},
#ifdef SIGPWR
    {SIGPWR, "SIGPWR"},
#endif
    {SIGSYS, "SIGSYS"},
};
constexpr int kMaxSignal = 31;  // standard signals; real-time ones make no sense as a stop signal

}  // namespace

std::optional<std::string> closest(std::string_view name, const std::vector<std::string_view>& known) {
  std::optional<std::string> best;
  std::size_t best_d = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (auto k : known) {
    std::size_t d = edit_distance(name, k);
    if (d < best_d) {
      best_d = d;
      best = std::string(k);
    }
  }
  if (best) return best;
  // A shortened name ("tls_ca" for tls_ca_file): the one known name it begins.
  std::optional<std::string> extended;
  for (auto k : known) {
    if (name.size() >= 3 && k.size() > name.size() && k.substr(0, name.size()) == name) {
      if (extended) return std::nullopt;  // ambiguous
      extended = std::string(k);
    }
  }
  return extended;
}

}  // namespace detail

using detail::enum_name;

std::optional<std::string> closest_name(std::string_view name, const std::vector<std::string_view>& known) {
  return detail::closest(name, known);
}

std::optional<int> parse_signal(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (name.size() > 2) return std::nullopt;
    int n = std::stoi(name);
    if (n < 1 || n > detail::kMaxSignal) return std::nullopt;
    return n;
  }
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.rfind("SIG", 0) != 0) upper = "SIG" + upper;
  for (const auto& s : detail::kSignals) {
    if (upper == s.name) return s.number;
  }
  return std::nullopt;
}

std::string signal_name(int sig) {
  for (const auto& s : detail::kSignals) {
    if (s.number == sig) return s.name;
  }
  return std::to_string(sig);
}

const char* to_string(Strategy v) { return enum_name(detail::kStrategies, v); }
const char* to_string(Jitter v) { return enum_name(detail::kJitters, v); }
const char* to_string(Mode v) { return enum_name(detail::kModes, v); }
const char* to_string(Restart v) { return enum_name(detail::kRestarts, v); }
const char* to_string(LogLevel v) { return enum_name(detail::kLevels, v); }
const char* to_string(LogFormat v) { return enum_name(detail::kFormats, v); }

}  // namespace redisgo::config
