#pragma once
/// The exit statuses of redisgo_task(1), EXIT STATUS, in one table: sysexits(3) codes,
/// timeout(1)'s 124 and the shell's 126/127. Every subcommand, `main` and the daemon take
/// their status from here; lower layers report why (an exception type, a cause), never a
/// status.

namespace redisgo {

inline constexpr int kExitOk = 0;            ///< done; supervise stopped on request
inline constexpr int kExitUnavailable = 69;  ///< EX_UNAVAILABLE: no quorum of nodes reachable
inline constexpr int kExitSoftware = 70;     ///< EX_SOFTWARE: internal error (a bug); the lease is released first
inline constexpr int kExitOsError = 71;      ///< EX_OSERR: the keeper was killed from outside, the child with it
inline constexpr int kExitIoError = 74;      ///< EX_IOERR: a report could not be written to stdout
inline constexpr int kExitTempFail = 75;     ///< EX_TEMPFAIL: lease busy, not acquired, or lost
inline constexpr int kExitNoPerm = 77;       ///< EX_NOPERM: credentials or TLS verification refused
inline constexpr int kExitConfig = 78;       ///< EX_CONFIG: bad configuration or command line
inline constexpr int kExitTimeout = 124;     ///< timeout(1): oneshot child ran past [task] timeout
inline constexpr int kExitCannotRun = 126;   ///< sh(1): the command was found but could not be run
inline constexpr int kExitNotFound = 127;    ///< sh(1): the command was not found

/// Why a run or a subcommand ended, when it is not the child's own status.
enum class Outcome {
  kDone,           ///< 0
  kBusy,           ///< another holder has the lease, retries exhausted, --no-wait, stopped while waiting
  kLeaseLost,      ///< the lease was lost (or about to end) while the child ran or before it started
  kUnavailable,    ///< no quorum of nodes could be reached
  kRefused,        ///< Redis refused our credentials, or TLS verification failed
  kBadConfig,      ///< the configuration or the command line is invalid
  kTimedOut,       ///< the oneshot child ran past [task] timeout
  kBug,            ///< an internal error
  kKeeperKilled,   ///< the child's keeper was killed from outside (the OOM killer?): the child died with it
  kOutputFailed,   ///< stdout could not take the report
  kCannotRun,      ///< the command was found but could not be started
  kNotFound,       ///< the command was not found
};

/// The status of `outcome` (the table above).
constexpr int exit_status(Outcome outcome) {
  switch (outcome) {
    case Outcome::kDone: return kExitOk;
    case Outcome::kBusy:
    case Outcome::kLeaseLost: return kExitTempFail;
    case Outcome::kUnavailable: return kExitUnavailable;
    case Outcome::kRefused: return kExitNoPerm;
    case Outcome::kBadConfig: return kExitConfig;
    case Outcome::kTimedOut: return kExitTimeout;
    case Outcome::kBug: return kExitSoftware;
    case Outcome::kKeeperKilled: return kExitOsError;
    case Outcome::kOutputFailed: return kExitIoError;
    case Outcome::kCannotRun: return kExitCannotRun;
    case Outcome::kNotFound: return kExitNotFound;
  }
  return kExitSoftware;
}

}  // namespace redisgo
