#pragma once
/// Shared by the files of check's findings only (not part of the interface):
/// commands/check_findings.h is what check.cpp and the tests use.

#include <string>
#include <vector>

namespace redisgo::commands::check::detail {

/// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& parts);

}  // namespace redisgo::commands::check::detail
