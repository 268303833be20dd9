#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>

#include "process/signals.h"

namespace process_signals_test {

using redisgo::process::block_handled_signals;
using redisgo::process::handled_signals;
using redisgo::process::SignalFd;

namespace {

// block_handled_signals() changes process state for good; other tests in the same binary
// start processes that must not inherit a blocked SIGTERM or an ignored SIGPIPE.
class SignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &old_mask_), 0);
    ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &old_pipe_), 0);
  }
  void TearDown() override {
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  sigset_t old_mask_{};
  struct sigaction old_pipe_ {};
};

}  // namespace

TEST_F(SignalsTest, HandledSetIsTheDocumentedOne) {
  sigset_t set = handled_signals();
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGPWR, SIGIO, SIGVTALRM, SIGPROF,
                  SIGXCPU, SIGXFSZ, SIGWINCH, SIGURG, SIGTSTP, SIGCONT}) {
    EXPECT_EQ(sigismember(&set, sig), 1) << sig;
  }
  for (int sig : {SIGKILL, SIGSTOP, SIGCHLD, SIGPIPE, SIGSEGV}) EXPECT_EQ(sigismember(&set, sig), 0) << sig;
}

TEST_F(SignalsTest, BlocksHandledSignalsAndIgnoresSigpipe) {
  block_handled_signals();
  sigset_t now;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &now), 0);
  EXPECT_EQ(sigismember(&now, SIGTERM), 1);
  EXPECT_EQ(sigismember(&now, SIGUSR2), 1);
  struct sigaction pipe_action {};
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &pipe_action), 0);
  EXPECT_EQ(pipe_action.sa_handler, SIG_IGN);
}

TEST_F(SignalsTest, SignalFdReceivesBlockedSignal) {
  block_handled_signals();
  SignalFd fd;
  EXPECT_EQ(fd.read(), std::nullopt);  // nothing pending, and nonblocking

  ASSERT_EQ(::raise(SIGUSR1), 0);  // blocked, so it stays pending for the signalfd
  pollfd p{fd.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  EXPECT_EQ(fd.read(), SIGUSR1);
  EXPECT_EQ(fd.read(), std::nullopt);  // consumed
}

TEST_F(SignalsTest, SignalFdIsCloseOnExec) {
  block_handled_signals();
  SignalFd fd;
  int flags = ::fcntl(fd.fd(), F_GETFD);
  ASSERT_GE(flags, 0);
  EXPECT_TRUE(flags & FD_CLOEXEC);
}

}  // namespace process_signals_test
