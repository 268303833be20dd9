# Where `cmake --install` puts the systemd unit (README.md "Deployment", step 1).
#
# systemd reads system units from /etc/systemd/system, /usr/local/lib/systemd/system and
# /usr/lib/systemd/system (`systemd-analyze --system unit-paths`), never from under an
# arbitrary prefix: a unit installed to /opt/redisgo_task/lib/systemd/system is one that
# `systemctl enable` cannot find. So:
#   setting empty (the default): PREFIX/lib/systemd/system when PREFIX is /usr or
#     /usr/local, where systemd looks (a distribution package, a plain install);
#     /etc/systemd/system for any other prefix (the administrator's own units);
#   setting absolute: that directory, whatever the prefix;
#   setting relative: PREFIX/setting.
# Run at install time (the prefix is only known then: `cmake --install --prefix`), and by
# tests/integration/ops_install_test.cpp, which checks the rule as a table:
#   cmake -DPREFIX=/opt/x -DSETTING= -P cmake/systemd_unit_dir.cmake   prints the directory.

function(redisgo_systemd_unit_dir out prefix setting)
  string(REGEX REPLACE "(.)/+$" "\\1" prefix "${prefix}")  # "/usr/local/" is /usr/local
  if(IS_ABSOLUTE "${setting}")
    set(dir "${setting}")
  elseif(NOT setting STREQUAL "")
    set(dir "${prefix}/${setting}")
  elseif(prefix STREQUAL "/usr" OR prefix STREQUAL "/usr/local")
    set(dir "${prefix}/lib/systemd/system")
  else()
    set(dir "/etc/systemd/system")
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  redisgo_systemd_unit_dir(redisgo_dir "${PREFIX}" "${SETTING}")
  message("${redisgo_dir}")
endif()
