// The command line's own lines on stderr under journald (logging.h, prefix_stderr_for_journal).
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <streambuf>
#include <string>

#include "log/logging.h"

namespace redisgo::log {
namespace {

/// Holds each line until its end, then writes it to `out` behind its syslog priority.
class PriorityLines final : public std::streambuf {
 public:
  explicit PriorityLines(std::streambuf* out) : out_(out) {}

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    line_ += traits_type::to_char_type(c);
    if (c == '\n') return put_line() ? c : traits_type::eof();
    return c;
  }
  int sync() override {
    // A line flushed before its end goes out as it is; its end gets no second prefix.
    if (!line_.empty() && !put_line()) return -1;
    return out_->pubsync();
  }

 private:
  bool put_line() {
    const bool continues = !at_start_;
    at_start_ = line_.back() == '\n';
    std::string text;
    if (!continues) {
      // A warning of ours says so at its head; any other line of the command line's own is
      // an error (usage, a config that cannot run, a fatal one).
      text = line_.find(": warning:") != std::string::npos ? "<4>" : "<3>";
    }
    text += line_;
    line_.clear();
    const auto n = static_cast<std::streamsize>(text.size());
    return out_->sputn(text.data(), n) == n;
  }

  std::streambuf* out_;
  std::string line_;
  bool at_start_ = true;
};

}  // namespace

void prefix_stderr_for_journal() {
  if (!is_journal_stream(STDERR_FILENO, std::getenv("JOURNAL_STREAM"))) return;
  // Never destroyed: std::cerr is flushed after every static destructor has run, and a
  // buffer destroyed before that flush would be a use after free at exit.
  static auto* const lines = new PriorityLines(std::cerr.rdbuf());
  std::cerr.rdbuf(lines);
}

}  // namespace redisgo::log
