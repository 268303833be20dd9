#include "redis/tls.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <mutex>

#include "util/error.h"
// Last: OpenSSL's functions become calls through the pointers loaded at make_tls().
#include "redis/openssl_calls.h"

// OpenSSL's API macros (BIO_set_fd, SSL_set_tlsext_host_name, ...) expand to C casts.
#pragma GCC diagnostic ignored "-Wold-style-cast"

namespace redisgo::redis {
namespace {

/// OpenSSL's queued errors as one line ("" if none); clears the queue.
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    // "error:0A000086:SSL routines::certificate verify failed" -> keep the reason part.
    std::string line(buf);
    auto at = line.rfind(':');
    out += at == std::string::npos ? line : line.substr(at + 1);
  }
  return out;
}

// ---- A socket BIO that never raises SIGPIPE ----------------------------------------------
// Written whole rather than as a copy of OpenSSL's socket BIO with read and write replaced:
// the getters that copy needed (BIO_meth_get_ctrl, ...) are deprecated from OpenSSL 3.5
// (Debian 13). The descriptor is the BIO's data; it is never closed here (BIO_NOCLOSE: the
// Transport owns it).

int bio_fd(BIO* b) { return static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b))); }

int bio_write(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  for (;;) {
    ssize_t n = ::send(bio_fd(b), data, static_cast<std::size_t>(len), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
    return -1;
  }
}

int bio_read(BIO* b, char* data, int len) {
  BIO_clear_retry_flags(b);
  for (;;) {
    ssize_t n = ::recv(bio_fd(b), data, static_cast<std::size_t>(len), 0);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(b);
    return -1;
  }
}

int bio_puts(BIO* b, const char* text) { return bio_write(b, text, static_cast<int>(std::strlen(text))); }

/// What OpenSSL's socket BIO answers, for the requests a TLS connection makes: the fd set
/// and read back, the close flag, and flush (a no-op: every write goes straight out).
long bio_ctrl(BIO* b, int cmd, long num, void* ptr) {
  switch (cmd) {
    case BIO_C_SET_FD:
      BIO_set_data(b, reinterpret_cast<void*>(static_cast<std::intptr_t>(*static_cast<int*>(ptr))));
      BIO_set_shutdown(b, static_cast<int>(num));
      BIO_set_init(b, 1);
      return 1;
    case BIO_C_GET_FD:
      if (!BIO_get_init(b)) return -1;
      if (ptr) *static_cast<int*>(ptr) = bio_fd(b);
      return bio_fd(b);
    case BIO_CTRL_GET_CLOSE: return BIO_get_shutdown(b);
    case BIO_CTRL_SET_CLOSE: BIO_set_shutdown(b, static_cast<int>(num)); return 1;
    case BIO_CTRL_DUP:
    case BIO_CTRL_FLUSH: return 1;
    default: return 0;
  }
}

int bio_create(BIO* b) {
  BIO_set_data(b, reinterpret_cast<void*>(static_cast<std::intptr_t>(-1)));
  BIO_set_init(b, 0);
  return 1;
}

int bio_destroy(BIO* b) {
  if (BIO_get_init(b) && BIO_get_shutdown(b)) ::close(bio_fd(b));
  BIO_set_init(b, 0);
  return 1;
}

const BIO_METHOD* nosignal_socket_method() {
  static const BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "redisgo socket");
    if (!m) return m;  // out of memory: TlsTransport says it cannot create a BIO
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_puts(m, bio_puts);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    BIO_meth_set_destroy(m, bio_destroy);
    return m;
  }();
  return method;
}

/// The peer refused us over TLS (its alert names a certificate problem): with TLS 1.3 a
/// server that requires a client certificate says so after our side of the handshake
/// finished, on the first read. Verification, not a retryable failure (exit 77).
bool is_refusal(const std::string& why) {
  for (const char* refusal : {"certificate required", "bad certificate", "unknown ca", "certificate unknown",
                              "certificate expired", "certificate revoked", "unsupported certificate",
                              "access denied", "handshake failure"}) {
    if (why.find(refusal) != std::string::npos) return true;
  }
  return false;
}

bool is_ip_literal(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::string asn1_time(const ASN1_TIME* t) {
  if (!t) return "?";
  BIO* mem = BIO_new(BIO_s_mem());
  ASN1_TIME_print(mem, t);
  char* data = nullptr;
  long n = BIO_get_mem_data(mem, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(mem);
  return out;
}

std::string x509_name(X509_NAME* name) {
  if (!name) return "?";
  char buf[512];
  X509_NAME_oneline(name, buf, sizeof buf);
  return buf;
}

class TlsTransport final : public Transport {
 public:
  TlsTransport(UniqueFd fd, SSL_CTX* ctx, const std::string& name, bool verify, bool have_cert)
      : Transport(std::move(fd)), have_cert_(have_cert) {
    ssl_ = SSL_new(ctx);
    if (!ssl_) throw IoError("TLS: cannot create a connection: " + openssl_errors());
    SSL_set_app_data(ssl_, this);
    const BIO_METHOD* method = nosignal_socket_method();
    BIO* bio = method ? BIO_new(method) : nullptr;
    if (!bio) throw IoError("TLS: cannot create a BIO: " + openssl_errors());
    BIO_set_fd(bio, fd_.get(), BIO_NOCLOSE);
    SSL_set_bio(ssl_, bio, bio);
    // Writes resume with the same length after WANT_WRITE (see write()); the buffer they
    // come from may have moved (it is appended to meanwhile).
    SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (!name.empty()) {
      if (!is_ip_literal(name)) SSL_set_tlsext_host_name(ssl_, name.c_str());
      if (verify) {
        if (is_ip_literal(name)) {
          X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str());
        } else {
          SSL_set1_host(ssl_, name.c_str());
        }
      }
    }
  }
  /// OpenSSL's client-certificate callback: only called when we have none to offer.
  static int on_certificate_request(SSL* ssl, X509** /*cert*/, EVP_PKEY** /*key*/) {
    if (auto* self = static_cast<TlsTransport*>(SSL_get_app_data(ssl))) self->asked_for_cert_ = true;
    return 0;  // none: the server decides
  }

  ~TlsTransport() override {
    if (ssl_) SSL_free(ssl_);  // no close_notify: the socket is closed right after
  }

  short handshake() override {
    ERR_clear_error();
    const int rc = SSL_connect(ssl_);
    if (rc == 1) return 0;
    const int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ) return POLLIN;
    if (err == SSL_ERROR_WANT_WRITE) return POLLOUT;
    const long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) {
      throw TlsError(std::string("TLS certificate verification failed: ") + X509_verify_cert_error_string(verify));
    }
    std::string why = openssl_errors();
    if (err == SSL_ERROR_SYSCALL && why.empty()) {
      why = errno != 0 ? std::string(std::strerror(errno)) : "connection closed during the handshake";
    }
    // The server refused our certificate (tls-auth-clients): its alerts say so.
    if (is_refusal(why) || missing_certificate()) throw TlsError(refused("TLS handshake refused by the server", why));
    throw IoError("TLS handshake failed: " + why);
  }

  std::size_t read(char* buf, std::size_t n, short* want) override {
    ERR_clear_error();
    const int rc = SSL_read(ssl_, buf, static_cast<int>(std::min<std::size_t>(n, 1 << 30)));
    if (rc > 0) return static_cast<std::size_t>(rc);
    return fail(rc, want, "read");
  }

  std::size_t write(const char* buf, std::size_t n, short* want) override {
    // After WANT_READ/WANT_WRITE OpenSSL wants the same length again; the caller only ever
    // appends, so the first `pending_` bytes are the same bytes.
    const std::size_t len = pending_ > 0 ? std::min(pending_, n) : std::min<std::size_t>(n, 1 << 30);
    ERR_clear_error();
    const int rc = SSL_write(ssl_, buf, static_cast<int>(len));
    if (rc > 0) {
      pending_ = 0;
      return static_cast<std::size_t>(rc);
    }
    pending_ = len;
    return fail(rc, want, "write");
  }

  bool has_buffered() const override { return SSL_pending(ssl_) > 0; }

  std::string peer_info() const override {
    X509* cert = SSL_get1_peer_certificate(ssl_);
    if (!cert) return "TLS " + std::string(SSL_get_version(ssl_)) + ", no server certificate";
    std::string out = "TLS " + std::string(SSL_get_version(ssl_)) + ", certificate " +
                      x509_name(X509_get_subject_name(cert)) + ", issued by " + x509_name(X509_get_issuer_name(cert)) +
                      ", expires " + asn1_time(X509_get0_notAfter(cert));
    int days = 0, secs = 0;
    if (ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notAfter(cert))) out += " (in " + std::to_string(days) + " days)";
    X509_free(cert);
    return out;
  }

 private:
  /// The server asked for a client certificate and we have none: with TLS 1.3 its
  /// refusal comes after our handshake, as an alert or just a closed (even reset)
  /// connection on the first read. Either way, that is what to tell the operator.
  bool missing_certificate() const { return asked_for_cert_ && !have_cert_; }
  std::string refused(const std::string& what, const std::string& why) const {
    std::string out = what;
    if (missing_certificate()) {
      out += ": it requires a client certificate (tls-auth-clients) and none is configured; set tls_cert_file and "
             "tls_key_file";
    }
    return out + (why.empty() ? "" : " (" + why + ")");
  }

  std::size_t fail(int rc, short* want, const char* what) {
    const int err = SSL_get_error(ssl_, rc);
    if (missing_certificate() && err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      const std::string why = openssl_errors();
      throw TlsError(refused("TLS session refused by the server", why.empty() ? std::strerror(errno) : why));
    }
    switch (err) {
      case SSL_ERROR_WANT_READ:
        *want = POLLIN;
        return 0;
      case SSL_ERROR_WANT_WRITE:
        *want = POLLOUT;
        return 0;
      case SSL_ERROR_ZERO_RETURN: throw ClosedError("connection closed by the server (TLS close_notify)");
      case SSL_ERROR_SSL: {
        const std::string why = openssl_errors();
        if (is_refusal(why)) throw TlsError("TLS session refused by the server: " + why);
        throw IoError(std::string("TLS ") + what + ": " + why);
      }
      case SSL_ERROR_SYSCALL: {
        const std::string why = openssl_errors();
        if (!why.empty()) throw IoError(std::string("TLS ") + what + ": " + why);
        if (errno == 0 || errno == EPIPE || errno == ECONNRESET) throw ClosedError("connection closed by the server");
        throw IoError(errno_message(std::string("TLS ") + what, errno));
      }
      default: throw IoError(std::string("TLS ") + what + ": " + openssl_errors());
    }
  }

  SSL* ssl_ = nullptr;
  std::size_t pending_ = 0;
  bool have_cert_ = false;
  bool asked_for_cert_ = false;
};

class TlsFactory final : public TransportFactory {
 public:
  explicit TlsFactory(const TlsOptions& options) : options_(options) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_) throw Error("TLS: cannot create a context: " + openssl_errors());
    try {
      configure();
    } catch (...) {
      SSL_CTX_free(ctx_);  // the destructor does not run for a constructor that throws
      throw;
    }
  }
  ~TlsFactory() override { SSL_CTX_free(ctx_); }
  TlsFactory(const TlsFactory&) = delete;
  TlsFactory& operator=(const TlsFactory&) = delete;

 private:
  void configure() {
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    if (!options_.skip_verify) {
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
      const bool loaded = options_.ca_file.empty()
                              ? SSL_CTX_set_default_verify_paths(ctx_) == 1
                              : SSL_CTX_load_verify_locations(ctx_, options_.ca_file.c_str(), nullptr) == 1;
      if (!loaded) {
        const std::string what = options_.ca_file.empty() ? "the system trust store" : "'" + options_.ca_file + "'";
        throw ConfigError("redis.tls_ca_file: cannot load CA certificates from " + what + ": " + openssl_errors());
      }
    } else {
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    }
    if (options_.cert_file.empty()) {
      SSL_CTX_set_client_cert_cb(ctx_, &TlsTransport::on_certificate_request);
    } else {
      if (SSL_CTX_use_certificate_chain_file(ctx_, options_.cert_file.c_str()) != 1) {
        throw ConfigError("redis.tls_cert_file: cannot load the client certificate '" + options_.cert_file + "': " + openssl_errors());
      }
      if (SSL_CTX_use_PrivateKey_file(ctx_, options_.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        throw ConfigError("redis.tls_key_file: cannot load the client key '" + options_.key_file + "': " + openssl_errors());
      }
      if (SSL_CTX_check_private_key(ctx_) != 1) {
        throw ConfigError("redis.tls_key_file: the client key '" + options_.key_file + "' does not match the certificate '" +
                       options_.cert_file + "'");
      }
    }
  }

 public:
  std::unique_ptr<Transport> make(UniqueFd fd, const Endpoint& endpoint) const override {
    const std::string& name = !options_.server_name.empty() ? options_.server_name : endpoint.host;
    return std::make_unique<TlsTransport>(std::move(fd), ctx_, name, !options_.skip_verify, !options_.cert_file.empty());
  }

 private:
  TlsOptions options_;
  SSL_CTX* ctx_ = nullptr;
};

}  // namespace

std::shared_ptr<const TransportFactory> make_tls(const TlsOptions& options) {
  openssl::load();  // throws ConfigError naming libssl when it cannot be loaded
  return std::make_shared<TlsFactory>(options);
}

}  // namespace redisgo::redis
