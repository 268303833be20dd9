#include "redis/openssl_api.h"

#include <dlfcn.h>

#include <string>

#include "util/error.h"

namespace redisgo::redis::openssl {
namespace {

#define REDISGO_STRINGIFY_(x) #x
#define REDISGO_STRINGIFY(x) REDISGO_STRINGIFY_(x)
constexpr const char* kLibrary = "libssl.so." REDISGO_STRINGIFY(OPENSSL_SHLIB_VERSION);

/// What loading said: empty when every function was found.
struct Loaded {
  Api api;
  std::string error;
};

std::string dl_error() {
  const char* e = ::dlerror();
  return e ? e : "unknown error";
}

Loaded load_once() {
  Loaded out;
  // Local: our names resolve to nothing else in the process. Never closed: its functions
  // serve every connection until the process ends.
  void* lib = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    out.error = dl_error();
    return out;
  }
  // dlsym on libssl's handle also finds what its dependency libcrypto defines.
#define REDISGO_OPENSSL_LOOK_UP(name)                                                 \
  if (out.error.empty()) {                                                            \
    ::dlerror();                                                                      \
    void* p = ::dlsym(lib, #name);                                                    \
    if (p) {                                                                          \
      out.api.name = reinterpret_cast<decltype(out.api.name)>(p);                     \
    } else {                                                                          \
      out.error = "it has no function " #name " (" + dl_error() + ")";                \
    }                                                                                 \
  }
  REDISGO_OPENSSL_FUNCTIONS(REDISGO_OPENSSL_LOOK_UP)
#undef REDISGO_OPENSSL_LOOK_UP
  return out;
}

const Loaded& loaded() {
  static const Loaded once = load_once();  // once, whichever thread asks first
  return once;
}

}  // namespace

const Api& load() {
  const Loaded& l = loaded();
  if (!l.error.empty()) {
    throw ConfigError(std::string("redis.tls: TLS needs OpenSSL's ") + kLibrary +
                      " (Debian: the package libssl3, libssl3t64 from Debian 13), which cannot be loaded: " + l.error);
  }
  return l.api;
}

const Api& api() noexcept { return loaded().api; }

}  // namespace redisgo::redis::openssl
