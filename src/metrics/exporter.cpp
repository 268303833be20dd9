// The exporter: one thread, one poll() over the stop eventfd, the listening socket and
// the clients. The textfile is rendered from the same loop but written by a thread of its
// own (textfile.h): a write that blocks holds up neither a scrape nor a stop.
//
// Nothing here may hurt the daemon: a client that sends nothing, a slow reader, a flood
// of connections or a full disk costs at most a bounded buffer and a file descriptor per
// client (kMaxClients of them) until its deadline, and every pass of the loop sleeps in
// poll() until an fd is ready or a real deadline comes.
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>

#include "metrics/listen.h"
#include "metrics/metrics.h"
#include "metrics/textfile.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/unique_fd.h"

namespace redisgo::metrics {

namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Past this, a connection is accepted and closed at once: fds stay bounded under a flood.
constexpr std::size_t kMaxClients = 32;
/// Request line and headers; a larger head gets 431.
constexpr std::size_t kMaxRequestHead = 8192;
/// Connections taken from the backlog per pass, so clients already in hand get served.
constexpr int kAcceptBatch = 64;
/// After accept() fails for want of fds or memory the socket stays readable: look away
/// for this long instead of spinning on it.
constexpr milliseconds kAcceptPause{100};
constexpr milliseconds kMinTextfileInterval{10};

constexpr const char* kMetricsType = "text/plain; version=0.0.4; charset=utf-8";

struct Client {
  UniqueFd fd;
  std::string in;       ///< the request head so far
  std::string out;      ///< the whole response, once the head is complete
  std::size_t sent = 0;
  bool writing = false;
  bool done = false;    ///< to be closed and dropped at the end of the pass
  Steady::time_point deadline;
};

std::string status_response(int code, const char* reason, bool body, const char* extra_header = "") {
  std::string text = std::to_string(code) + " " + reason + "\n";
  std::string r = "HTTP/1.1 " + std::to_string(code) + " " + reason +
                  "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(text.size()) +
                  "\r\n" + extra_header + "Connection: close\r\n\r\n";
  if (body) r += text;
  return r;
}

bool is_tchar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

/// The response to a complete request head (request line and header lines, without the
/// blank line that ends it).
std::string respond(std::string_view head, const Metrics& metrics) {
  // RFC 9112 2.2: at least one empty line before the request line should be ignored.
  while (!head.empty() && (head.front() == '\r' || head.front() == '\n')) head.remove_prefix(1);
  auto eol = head.find('\n');
  std::string_view line = head.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return status_response(400, "Bad Request", true);
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), is_tchar) || target.empty() ||
      version.size() != 8 || version.substr(0, 7) != "HTTP/1." || !std::isdigit(static_cast<unsigned char>(version[7]))) {
    return status_response(400, "Bad Request", true);
  }
  // Header lines: each must be "name: value" (obsolete line folding is refused too).
  for (std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 1); !rest.empty();) {
    auto e = rest.find('\n');
    std::string_view h = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 1);
    if (!h.empty() && h.back() == '\r') h.remove_suffix(1);
    auto colon = h.find(':');
    if (colon == 0 || colon == std::string_view::npos ||
        !std::all_of(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(colon), is_tchar)) {
      return status_response(400, "Bad Request", true);
    }
  }
  // Absolute form (a proxy's request): keep the path.
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.substr(0, scheme.size()) == scheme) {
      auto slash = target.find('/', scheme.size());
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    }
  }
  if (target.front() != '/') return status_response(400, "Bad Request", true);
  std::string_view path = target.substr(0, target.find('?'));
  bool head_only = method == "HEAD";
  if (path != "/metrics") return status_response(404, "Not Found", !head_only);
  if (method != "GET" && !head_only) return status_response(405, "Method Not Allowed", true, "Allow: GET, HEAD\r\n");

  std::string body = metrics.render();
  std::string r = "HTTP/1.1 200 OK\r\nContent-Type: ";
  r += kMetricsType;
  r += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (!head_only) r += body;
  return r;
}

/// "<path>.tmp.<16 random hex digits>": a name nobody can place a FIFO or a link at in
/// advance (a predictable one let anyone who may write the directory block the daemon).
std::string temp_name(const std::string& path) {
  std::uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    r = static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ULL ^
        static_cast<std::uint64_t>(Steady::now().time_since_epoch().count());
  }
  static const char* hex = "0123456789abcdef";
  std::string suffix(16, '0');
  for (int i = 15; i >= 0; --i, r >>= 4) suffix[static_cast<std::size_t>(i)] = hex[r & 0xf];
  return path + ".tmp." + suffix;
}

/// Writes `content` to a new temp file beside `path` and renames it over `path`, so a reader
/// sees the old file or the new one, never a part. Returns "" or why it failed (the temp
/// file is removed then). The temp file is always a new regular file of ours (O_EXCL: never
/// an existing FIFO, device or link), opened without blocking.
std::string write_atomically(const std::string& path, const std::string& content) {
  std::string tmp;
  UniqueFd fd;
  for (int tries = 0; tries < 4 && !fd; ++tries) {
    tmp = temp_name(path);
    fd = UniqueFd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd && errno != EEXIST) break;
  }
  if (!fd) return errno_message("metrics textfile " + path + ": cannot create " + tmp, errno);
  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    return errno_message("metrics textfile " + path + ": " + what, err);
  };
  for (std::size_t off = 0; off < content.size();) {
    ssize_t n = ::write(fd.get(), content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write " + tmp, errno);
    }
    off += static_cast<std::size_t>(n);
  }
  // close() reports a deferred write error (NFS, a full quota): check it.
  if (::close(fd.release()) != 0) return fail("cannot write " + tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename " + tmp, errno);
  return {};
}

int poll_timeout(Steady::time_point now, std::optional<Steady::time_point> wake) {
  if (!wake) return -1;
  if (*wake <= now) return 0;
  // Rounded up: waking a hair early would only bring another pass with a 0 timeout.
  auto ms = std::chrono::ceil<milliseconds>(*wake - now).count();
  return static_cast<int>(std::min<long long>(ms, INT_MAX));
}

}  // namespace

struct Exporter::Impl {
  Impl(Metrics& m, ExporterOptions o) : metrics(m), options(std::move(o)) {
    options.textfile_min_interval = std::max(options.textfile_min_interval, kMinTextfileInterval);
    options.textfile_refresh = std::max(options.textfile_refresh, options.textfile_min_interval);
    options.client_timeout = std::max(options.client_timeout, milliseconds(1));
  }

  void run() noexcept;
  void pass();
  void accept_clients(Steady::time_point now);
  void on_readable(Client& c, Steady::time_point now);
  void flush(Client& c);
  /// Hands the current text to the writer (which replaces one it has not written yet).
  void submit_textfile(Steady::time_point now);
  /// redisgo_task_textfile_write_errors_total from the writer's count, before a render: a
  /// daemon alive but unable to write its textfile shows it over HTTP.
  void note_textfile_errors() {
    if (writer) metrics.set_textfile_write_errors(writer->failures());
  }
  void record(const std::string& error) noexcept {
    try {
      std::lock_guard lock(error_mu);
      last_error = error;
    } catch (...) {
    }
  }

  double wall_now() const {
    if (options.wall_clock) return options.wall_clock();
    return wall_seconds();
  }

  Metrics& metrics;
  ExporterOptions options;
  UniqueFd listen_fd;
  int port = 0;
  Interrupt stop;
  std::thread thread;

  // Loop state: the exporter thread's only.
  std::vector<Client> clients;
  std::optional<Steady::time_point> accept_paused_until;
  Steady::time_point next_textfile_check;
  Steady::time_point last_textfile_submit;
  std::uint64_t submitted_version = 0;

  std::unique_ptr<detail::TextfileWriter> writer;  // null without a textfile
  bool stopped = false;

  mutable std::mutex error_mu;
  std::string last_error;  // the loop's own (a failed poll); the writer keeps the textfile's
};

void Exporter::Impl::submit_textfile(Steady::time_point now) {
  submitted_version = metrics.version();
  last_textfile_submit = now;
  writer->submit(metrics.render_textfile(wall_now()));
}

void Exporter::Impl::accept_clients(Steady::time_point now) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    UniqueFd fd(::accept4(listen_fd.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // EMFILE, ENFILE, ENOBUFS, ENOMEM...: the backlog stays readable; do not spin on it.
      accept_paused_until = now + kAcceptPause;
      return;
    }
    if (clients.size() >= kMaxClients) continue;  // closed at once by ~UniqueFd
    Client c;
    c.fd = std::move(fd);
    c.deadline = now + options.client_timeout;
    clients.push_back(std::move(c));
  }
}

void Exporter::Impl::on_readable(Client& c, Steady::time_point now) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.done = true;
      return;
    }
    if (n == 0) {  // gone before its request was complete
      c.done = true;
      return;
    }
    std::size_t scan_from = c.in.size() < 3 ? 0 : c.in.size() - 3;
    c.in.append(buf, static_cast<std::size_t>(n));
    std::size_t end = c.in.find("\r\n\r\n", scan_from);
    std::size_t head_len = end == std::string::npos ? std::string::npos : end + 2;
    if (auto lf = c.in.find("\n\n", scan_from); lf != std::string::npos && lf + 1 < head_len) head_len = lf + 1;
    if (head_len == std::string::npos ? c.in.size() > kMaxRequestHead : head_len > kMaxRequestHead) {
      c.out = status_response(431, "Request Header Fields Too Large", true);
    } else if (head_len != std::string::npos) {
      note_textfile_errors();
      c.out = respond(std::string_view(c.in).substr(0, head_len), metrics);
    } else {
      continue;
    }
    c.in.clear();
    c.in.shrink_to_fit();
    c.writing = true;
    c.deadline = now + options.client_timeout;
    flush(c);
    return;
  }
}

void Exporter::Impl::flush(Client& c) {
  while (c.sent < c.out.size()) {
    ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.done = true;
      return;
    }
    c.sent += static_cast<std::size_t>(n);
  }
  // All sent. Read what the client may still have sent (a body, a pipelined request):
  // closing with unread input would send a reset that can destroy the response.
  char buf[4096];
  for (int i = 0; i < 4 && ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {
  }
  c.fd.reset();  // now, so the client's EOF means our fd is gone
  c.done = true;
}

void Exporter::Impl::pass() {
  auto now = Steady::now();
  std::optional<Steady::time_point> wake;
  auto earliest = [&](Steady::time_point t) {
    if (!wake || t < *wake) wake = t;
  };

  std::vector<pollfd> fds;
  fds.reserve(clients.size() + 2);
  fds.push_back({stop.fd(), POLLIN, 0});
  bool polling_listen = false;
  if (listen_fd && accept_paused_until && now >= *accept_paused_until) accept_paused_until.reset();
  if (listen_fd) {
    if (accept_paused_until) {
      earliest(*accept_paused_until);
    } else {
      fds.push_back({listen_fd.get(), POLLIN, 0});
      polling_listen = true;
    }
  }
  std::size_t first_client = fds.size();
  for (const auto& c : clients) {
    fds.push_back({c.fd.get(), static_cast<short>(c.writing ? POLLOUT : POLLIN), 0});
    earliest(c.deadline);
  }
  if (!options.textfile.empty()) earliest(next_textfile_check);

  int rc = ::poll(fds.data(), fds.size(), poll_timeout(now, wake));
  if (rc < 0 && errno != EINTR) throw_errno("metrics: poll", errno);
  if (rc > 0 && fds[0].revents != 0) return;  // stop: run() looks at the flag

  now = Steady::now();
  if (rc > 0) {
    for (std::size_t i = 0; i < clients.size(); ++i) {
      auto revents = fds[first_client + i].revents;
      if (revents == 0) continue;
      Client& c = clients[i];
      if (c.writing) {
        flush(c);  // POLLERR/POLLHUP: send() fails and the client is dropped
      } else {
        on_readable(c, now);  // POLLHUP/POLLERR: recv() returns 0 or the error
      }
    }
  }
  for (auto& c : clients) {
    if (!c.done && now >= c.deadline) {
      // A slowloris or a reader that stalled. Reset rather than close: a plain close
      // would leave the kernel an orphan socket still trying to deliver what we queued.
      linger abort{1, 0};
      ::setsockopt(c.fd.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
      c.done = true;
    }
  }
  std::erase_if(clients, [](const Client& c) { return c.done; });
  if (polling_listen && (fds[1].revents & POLLIN)) accept_clients(now);

  if (writer && now >= next_textfile_check) {
    note_textfile_errors();
    // A failed write is tried again at the next check; a write still going on (a hung
    // mount) just has its text replaced by the newer one.
    const bool retry = !writer->last_error().empty() && !writer->writing();
    if (metrics.version() != submitted_version || now - last_textfile_submit >= options.textfile_refresh || retry) {
      submit_textfile(now);
    }
    next_textfile_check = Steady::now() + options.textfile_min_interval;
  }
}

void Exporter::Impl::run() noexcept {
  while (!stop.triggered()) {
    try {
      pass();
    } catch (const std::exception& e) {
      record(std::string("metrics exporter: ") + e.what());
      // Whatever failed (poll, an allocation), do not retry it in a tight loop.
      stop.wait_for(milliseconds(100));
    } catch (...) {
      stop.wait_for(milliseconds(100));
    }
  }
}

Exporter::Exporter(Metrics& metrics, ExporterOptions options)
    : impl_(std::make_unique<Impl>(metrics, std::move(options))) {
  Impl& m = *impl_;
  if (!m.options.listen.empty()) m.listen_fd = detail::bind_listen(m.options.listen, m.port);
  if (!m.options.textfile.empty()) {
    detail::TextfileWriter::Write write = m.options.textfile_write;
    if (!write) write = write_atomically;
    m.writer = std::make_unique<detail::TextfileWriter>(m.options.textfile, std::move(write));
    m.submit_textfile(Steady::now());
    // A directory that cannot be written fails the start. A write that outlasts the bound
    // (a hung mount) does not hold the start up: it goes on, and its outcome is reported
    // like any later write's.
    if (m.writer->wait(m.options.textfile_write_bound) && m.writer->failures() != 0) throw Error(m.writer->last_error());
    m.next_textfile_check = Steady::now() + m.options.textfile_min_interval;
  }
  if (m.listen_fd || m.writer) m.thread = std::thread([&m] { m.run(); });
}

std::string Exporter::stop() {
  Impl& m = *impl_;
  if (m.stopped) return {};
  m.stopped = true;
  m.stop.trigger();
  if (m.thread.joinable()) m.thread.join();
  m.listen_fd.reset();  // a scrape after the stop is refused, not left waiting
  m.clients.clear();
  if (!m.writer) return {};
  switch (m.options.at_stop) {
    case ExporterOptions::AtStop::kWrite: m.submit_textfile(Steady::now()); break;
    case ExporterOptions::AtStop::kRemove: m.writer->submit_remove(); break;
    case ExporterOptions::AtStop::kRecord: m.writer->submit(m.metrics.render_record()); break;
  }
  if (m.writer->finish(m.options.textfile_write_bound)) {
    // A removal refused (the file is no longer ours) or a last write that failed.
    return m.writer->last_error();
  }
  const std::string what = m.options.at_stop == ExporterOptions::AtStop::kRemove ? "removal" : "write";
  return "metrics textfile " + m.options.textfile + ": the last " + what + " did not end within " +
         std::to_string(m.options.textfile_write_bound.count()) +
         " ms (a hung file system?); left behind, its thread ends when the " + what + " returns";
}

Exporter::~Exporter() {
  try {
    stop();
  } catch (...) {
    // An allocation failed; the threads were stopped or detached as far as it got.
  }
}

int Exporter::port() const { return impl_->port; }

std::string Exporter::last_error() const {
  if (impl_->writer) {
    if (auto e = impl_->writer->last_error(); !e.empty()) return e;
  }
  std::lock_guard lock(impl_->error_mu);
  return impl_->last_error;
}

std::uint64_t Exporter::textfile_failures() const { return impl_->writer ? impl_->writer->failures() : 0; }

}  // namespace redisgo::metrics
