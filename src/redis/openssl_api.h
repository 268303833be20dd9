#pragma once
/// OpenSSL, loaded when a configuration asks for TLS (redis/tls.h): the binary is not
/// linked to libssl or libcrypto, so a run without `tls = true` neither maps them nor pays
/// the loader's work on their tables at every start (docs/BENCHMARKS.md). The headers are
/// OpenSSL's own (its types and macros); each function TLS calls is a pointer looked up in
/// libssl.so.3 (and the libcrypto it loads) by its public name. tls.cpp alone calls them,
/// by their usual names (redis/openssl_calls.h).

#include <openssl/err.h>
#include <openssl/opensslv.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

static_assert(OPENSSL_VERSION_MAJOR == 3, "the library loaded is libssl.so.3: build against OpenSSL 3's headers");

/// Every OpenSSL function tls.cpp calls, directly or through OpenSSL's macros.
#define REDISGO_OPENSSL_FUNCTIONS(X) \
  X(ASN1_TIME_diff) \
  X(ASN1_TIME_print) \
  X(BIO_clear_flags) \
  X(BIO_ctrl) \
  X(BIO_free) \
  X(BIO_get_data) \
  X(BIO_get_init) \
  X(BIO_get_new_index) \
  X(BIO_get_shutdown) \
  X(BIO_int_ctrl) \
  X(BIO_meth_new) \
  X(BIO_meth_set_create) \
  X(BIO_meth_set_ctrl) \
  X(BIO_meth_set_destroy) \
  X(BIO_meth_set_puts) \
  X(BIO_meth_set_read) \
  X(BIO_meth_set_write) \
  X(BIO_new) \
  X(BIO_s_mem) \
  X(BIO_set_data) \
  X(BIO_set_flags) \
  X(BIO_set_init) \
  X(BIO_set_shutdown) \
  X(ERR_clear_error) \
  X(ERR_error_string_n) \
  X(ERR_get_error) \
  X(SSL_CTX_check_private_key) \
  X(SSL_CTX_ctrl) \
  X(SSL_CTX_free) \
  X(SSL_CTX_load_verify_locations) \
  X(SSL_CTX_new) \
  X(SSL_CTX_set_client_cert_cb) \
  X(SSL_CTX_set_default_verify_paths) \
  X(SSL_CTX_set_verify) \
  X(SSL_CTX_use_PrivateKey_file) \
  X(SSL_CTX_use_certificate_chain_file) \
  X(SSL_connect) \
  X(SSL_ctrl) \
  X(SSL_free) \
  X(SSL_get0_param) \
  X(SSL_get1_peer_certificate) \
  X(SSL_get_error) \
  X(SSL_get_ex_data) \
  X(SSL_get_verify_result) \
  X(SSL_get_version) \
  X(SSL_new) \
  X(SSL_pending) \
  X(SSL_read) \
  X(SSL_set1_host) \
  X(SSL_set_bio) \
  X(SSL_set_ex_data) \
  X(SSL_write) \
  X(TLS_client_method) \
  X(X509_NAME_oneline) \
  X(X509_VERIFY_PARAM_set1_ip_asc) \
  X(X509_free) \
  X(X509_get0_notAfter) \
  X(X509_get_issuer_name) \
  X(X509_get_subject_name) \
  X(X509_verify_cert_error_string)

namespace redisgo::redis::openssl {

/// The functions, once loaded.
struct Api {
#define REDISGO_OPENSSL_POINTER(name) decltype(&::name) name = nullptr;
  REDISGO_OPENSSL_FUNCTIONS(REDISGO_OPENSSL_POINTER)
#undef REDISGO_OPENSSL_POINTER
};

/// Loads the library once per process (later calls return the same, or throw the same).
/// Throws ConfigError naming the library and what the loader said when it, or one of
/// the functions, cannot be found: nothing is started without the TLS the config asks for.
const Api& load();

/// The functions; load() has returned before (every TLS object is made after it).
const Api& api() noexcept;

}  // namespace redisgo::redis::openssl
