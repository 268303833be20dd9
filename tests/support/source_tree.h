#pragma once
/// The project's own sources, read by the tests that check the source itself (the layers of
/// docs/DESIGN.md, the size of files and functions): the files under src/, and their code
/// with the comments and the literals blanked out, so that what a comment or a string names
/// is not taken for code.

#include <string>
#include <vector>

namespace redisgo::testing {

/// The text of `relative` (to the source tree, "src/daemon/rules.h"); `found` says whether
/// it could be read.
std::string read_source(const std::string& relative, bool& found);

/// Every .h and .cpp under `relative` (a folder of the source tree, "src"), recursively, as
/// paths relative to the source tree ("src/cli/cli.cpp"), sorted.
std::vector<std::string> source_files(const std::string& relative);

/// `text` with its comments, string and character literals (raw strings too) and
/// preprocessor lines replaced by spaces, the line breaks kept: line N of the result is the
/// code of line N. A literal keeps its quotes ("" or ''), so the code still reads as code.
std::string code_only(const std::string& text);

}  // namespace redisgo::testing
