// Password files: read with O_NONBLOCK (a FIFO must not hang the start), refused when
// not a regular file or larger than any password, a final newline dropped.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "config/detail.h"
#include "util/error.h"
#include "util/unique_fd.h"

namespace redisgo::config::detail {
namespace {

/// A password file larger than this is certainly not a password (e.g. a wrong path to a
/// log or a binary); refusing it avoids reading something huge into memory.
constexpr std::size_t kMaxPasswordFile = 64 * 1024;

std::string user_name(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  return pw && pw->pw_name ? pw->pw_name : "uid " + std::to_string(uid);
}

/// The group that may read `path` as far as this user can tell: the file's, or when even
/// its directory is closed to us, the directory's. Empty when neither says (or it is root's).
std::string reading_group(const std::string& path) {
  struct stat st {};
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(path.c_str(), &st) != 0 && ::stat(dir.c_str(), &st) != 0) return {};
  if (st.st_gid == 0) return {};
  const group* gr = ::getgrgid(st.st_gid);
  return gr && gr->gr_name ? gr->gr_name : std::string();
}

/// What to do about a password file this user may not open: an admin's `status` or `check`
/// runs as somebody else than the unit, whose file it is.
std::string permission_hint(const std::string& path) {
  const std::string me = user_name(::geteuid());
  const std::string group = reading_group(path);
  std::string hint = "; user '" + me +
                     "' may not read it: run the command as the user the daemon runs as (the unit's User=, e.g. "
                     "sudo -u redisgo-task redisgo_task ...)";
  if (!group.empty()) {
    hint += ", or add '" + me + "' to group '" + group + "' (sudo usermod -aG " + group + " " + me +
            ", then log in again)";
  } else {
    hint += ", or give a group of its own read access to it (chgrp, chmod g+r) and add '" + me + "' to that group";
  }
  return hint;
}

}  // namespace

std::optional<std::string> read_secret_file(const std::string& path, std::string& why, bool& world_readable,
                                            bool explain_denial) {
  // O_NONBLOCK: a FIFO or a terminal named here must be an error, not a hang at start.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) {
    const int err = errno;
    why = errno_message("cannot open '" + path + "'", err);
    if (err == EACCES && explain_denial) why += permission_hint(path);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "'" + path + "' is not a regular file";
    return std::nullopt;
  }
  world_readable = (st.st_mode & S_IROTH) != 0;
  std::string data;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      why = errno_message("cannot read '" + path + "'", errno);
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
    if (data.size() > kMaxPasswordFile) {
      why = "'" + path + "' is larger than " + std::to_string(kMaxPasswordFile) + " bytes; not a password file";
      return std::nullopt;
    }
  }
  // Editors and `echo` add a newline that is not part of the password.
  if (!data.empty() && data.back() == '\n') {
    data.pop_back();
    if (!data.empty() && data.back() == '\r') data.pop_back();
  }
  if (data.empty()) {
    why = "'" + path + "' is empty";
    return std::nullopt;
  }
  return data;
}

bool credential_name_valid(std::string_view name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

std::optional<std::string> credential_path(const std::string& name, const EnvLookup& env, std::string& why) {
  if (auto dir = env ? env("CREDENTIALS_DIRECTORY") : std::nullopt; dir && !dir->empty()) {
    const std::string path = *dir + "/" + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
      why = "expected credential '" + name + "' in $CREDENTIALS_DIRECTORY (" + *dir +
            "), found none: the unit must load it (LoadCredential=" + name +
            ", which reads /etc/credstore/" + name + ", or LoadCredential=" + name + ":/path/to/file)";
      return std::nullopt;
    }
    return path;
  }
  // Outside a unit: where systemd looks for `LoadCredential=name` without a path, so that an
  // admin's `status` or a cron job (as root) reads what the unit is given.
  for (const char* store : {"/etc/credstore/", "/run/credstore/", "/usr/lib/credstore/"}) {
    const std::string path = store + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 || errno != ENOENT) return path;  // errors are read_secret_file()'s to say
  }
  why = "expected credential '" + name +
        "': $CREDENTIALS_DIRECTORY is not set (systemd sets it in a unit with LoadCredential=) and none of "
        "/etc/credstore, /run/credstore, /usr/lib/credstore holds it";
  return std::nullopt;
}

}  // namespace redisgo::config::detail

namespace redisgo::config {

std::optional<std::string> read_password_file(const std::string& path, std::string& why) {
  bool world_readable = false;
  return detail::read_secret_file(path, why, world_readable);
}

}  // namespace redisgo::config
