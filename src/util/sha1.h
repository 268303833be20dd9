#pragma once
/// SHA-1 of a byte string, as lowercase hex. Used only to name Lua scripts for EVALSHA
/// (Redis identifies a script by the SHA-1 of its text); not for anything secret.

#include <string>
#include <string_view>

namespace redisgo {

/// 40 lowercase hex digits.
std::string sha1_hex(std::string_view data);

}  // namespace redisgo
