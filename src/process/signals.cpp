#include "process/signals.h"

#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

#include "util/error.h"

namespace redisgo::process {

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGPWR, SIGIO, SIGVTALRM, SIGPROF,
                  SIGXCPU, SIGXFSZ, SIGWINCH, SIGURG, SIGTSTP, SIGCONT}) {
    sigaddset(&set, sig);
  }
  return set;
}

void block_handled_signals() {
  sigset_t set = handled_signals();
  // pthread_sigmask returns the error instead of setting errno.
  if (int err = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) throw_errno("pthread_sigmask", err);
  // A peer that closes its socket must give us EPIPE, not kill the daemon. Children get
  // SIGPIPE back at its default (Child::spawn resets every disposition).
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  if (::sigaction(SIGPIPE, &ignore, nullptr) != 0) throw_errno("sigaction(SIGPIPE)", errno);
  // A daemon in the background of a terminal must not be stopped by writing its log to it
  // (or reading): a stopped daemon cannot stop its child. Children get them back at their
  // default (Child::spawn resets every disposition).
  for (int sig : {SIGTTIN, SIGTTOU}) {
    if (::sigaction(sig, &ignore, nullptr) != 0) throw_errno("sigaction", errno);
  }
}

SignalFd::SignalFd() {
  sigset_t set = handled_signals();
  int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) throw_errno("signalfd", errno);
  fd_.reset(fd);
}

std::optional<int> SignalFd::read() {
  signalfd_siginfo info{};
  for (;;) {
    ssize_t n = ::read(fd_.get(), &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) return static_cast<int>(info.ssi_signo);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
    if (n < 0) throw_errno("read(signalfd)", errno);
    // The kernel only hands out whole records; anything else is a bug worth hearing of.
    throw IoError("read(signalfd): short read");
  }
}

}  // namespace redisgo::process
