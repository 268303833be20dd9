#pragma once
/// TLS to Redis with OpenSSL (redisgo_task(1), PRODUCTION REDIS): a Transport that runs a
/// non-blocking handshake (SSL_connect's WANT_READ / WANT_WRITE become poll events, so the
/// handshake is bounded by connect_timeout and cancellable like any other step), verifies
/// the server against tls_ca_file or the system store and against tls_server_name or the
/// node's host, and offers a client certificate for tls-auth-clients.
///
/// One SSL_CTX per configuration (OpenSSL's context is meant to be shared by threads; each
/// connection has its own SSL object, so no connection state is shared between the main
/// loop and the renewer). Writes go through a BIO of ours that sends with MSG_NOSIGNAL:
/// a peer that went away is EPIPE, never SIGPIPE.

#include <memory>
#include <string>

#include "redis/connection.h"

namespace redisgo::redis {

struct TlsOptions {
  std::string ca_file;      ///< PEM bundle to verify the server; empty = the system store
  std::string cert_file;    ///< client certificate (PEM chain); empty = none
  std::string key_file;     ///< its private key; required with cert_file
  std::string server_name;  ///< SNI and the name verified; empty = each node's host
  bool skip_verify = false; ///< tests only: no verification at all
};

/// Loads OpenSSL (redis/openssl_api.h: the first call in a process), then the CA,
/// certificate and key. Throws ConfigError naming libssl.so.3 when it cannot be loaded, or
/// naming the file and OpenSSL's reason.
/// Its transports' peer_info() describes the server's certificate (subject, issuer,
/// expiry) for `check`.
std::shared_ptr<const TransportFactory> make_tls(const TlsOptions& options);

}  // namespace redisgo::redis
