#pragma once
/// Exception tree used at module edges (STYLE.md "Errors").
///
/// Error            anything that went wrong talking to the outside world
///  +- IoError      a socket/syscall failed (connection refused, reset, EOF)
///  |   +- TimeoutError  connect or I/O timed out
///  +- ClosedError  the peer closed the connection
///  +- ReplyError   the server answered with an error reply (e.g. OOM, LOADING)
///  +- AuthError    the server refused our credentials (WRONGPASS, NOAUTH, NOPERM) or
///                  its TLS certificate failed verification: exit 77, not a retry
///
/// Release paths and destructors never throw; they log instead.

#include <stdexcept>
#include <string>

namespace redisgo {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class IoError : public Error {
 public:
  using Error::Error;
};

class TimeoutError : public IoError {
 public:
  using IoError::IoError;
};

class ClosedError : public Error {
 public:
  using Error::Error;
};

class ReplyError : public Error {
 public:
  using Error::Error;
};

class AuthError : public Error {
 public:
  using Error::Error;
};

/// Formats "what: strerror(err) (errno N)". Thread-safe (uses strerror_r).
std::string errno_message(const std::string& what, int err);

/// Throws IoError built by errno_message(what, err).
[[noreturn]] void throw_errno(const std::string& what, int err);

}  // namespace redisgo
