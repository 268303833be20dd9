#pragma once
/// Exception tree used at module edges.
///
/// Error            anything that went wrong talking to the outside world
///  +- IoError      a socket/syscall failed (connection refused, reset, EOF)
///  |   +- TimeoutError  connect or I/O timed out
///  +- ClosedError  the peer closed the connection
///  +- ReplyError   the server answered with an error reply (e.g. OOM, LOADING)
///  +- ConfigError  a setting that loaded but cannot be used (a PEM file that does not parse): exit 78
///  +- AuthError    the server refused our credentials (WRONGPASS, NOAUTH, NOPERM): exit 77
///      +- TlsError  a TLS handshake failed verification (either side's certificate)
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

/// A setting passed validation but cannot be used when the daemon sets up (a CA file that
/// holds no certificate, a key that does not match its certificate). Exit 78, like any
/// bad configuration: nothing was started.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// The TLS handshake failed verification: the server's certificate (or, seen from the
/// server, ours) was refused. Like refused credentials: exit 77, not a retry storm.
class TlsError : public AuthError {
 public:
  using AuthError::AuthError;
};

/// Formats "what: strerror(err) (errno N)". Thread-safe (uses strerror_r).
std::string errno_message(const std::string& what, int err);

/// Throws IoError built by errno_message(what, err).
[[noreturn]] void throw_errno(const std::string& what, int err);

}  // namespace redisgo
