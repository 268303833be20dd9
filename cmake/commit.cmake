# The commit `redisgo_task version` names, written as a C++ source file (run at every build,
# by CMakeLists.txt's redisgo_commit target):
#   cmake -DSOURCE=DIR -DOUT=FILE [-DCOMMIT=TEXT] -P cmake/commit.cmake
# From, in this order: COMMIT (the cache variable REDISGO_COMMIT) when set; git, when DIR is
# the top of a git work tree (its HEAD, 12 hex digits, "-dirty" when a tracked file differs);
# the file DIR/COMMIT, which scripts/package writes into the copy it builds the Debian
# package from (that copy has no .git, and in Debian 13's build root no git either);
# otherwise "unknown". FILE is rewritten only when its text changes, so that a build at the
# same commit compiles nothing again.

set(commit "${COMMIT}")
if(commit STREQUAL "")
  find_program(GIT git)
  if(GIT)
    execute_process(COMMAND "${GIT}" -C "${SOURCE}" rev-parse --show-toplevel
                    OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
    # A copy of the tree inside another clone (build-deb/...) is not that clone's commit.
    if(rc EQUAL 0 AND EXISTS "${top}" AND EXISTS "${SOURCE}")
      file(REAL_PATH "${top}" top)
      file(REAL_PATH "${SOURCE}" source_real)
    endif()
    if(rc EQUAL 0 AND top STREQUAL source_real)
      execute_process(COMMAND "${GIT}" -C "${SOURCE}" rev-parse --short=12 HEAD
                      OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      execute_process(COMMAND "${GIT}" -C "${SOURCE}" status --porcelain --untracked-files=no
                      OUTPUT_VARIABLE changes ERROR_QUIET)
      if(NOT commit STREQUAL "" AND NOT changes STREQUAL "")
        string(APPEND commit "-dirty")
      endif()
    endif()
  endif()
endif()
if(commit STREQUAL "" AND EXISTS "${SOURCE}/COMMIT")
  file(STRINGS "${SOURCE}/COMMIT" commit LIMIT_COUNT 1)
endif()
# Only what a commit name is made of: the text goes into a C++ string literal.
string(REGEX REPLACE "[^0-9A-Za-z._+~-]" "" commit "${commit}")
if(commit STREQUAL "")
  set(commit "unknown")
endif()

set(text "// Written by cmake/commit.cmake at build time.\nnamespace redisgo::cli {\nextern const char kCommit[] = \"${commit}\";\n}  // namespace redisgo::cli\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
