#include "files/directory_trust.hpp"

#include <fmt/format.h>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <vector>

namespace arun::io {
namespace {

namespace fs = std::filesystem;

// As the kernel's own limit on links followed in one lookup (MAXSYMLINKS).
constexpr int max_links = 40;

std::string user_name(uid_t uid) {
  std::vector<char> buf(16 * 1024);
  passwd pw{}, *found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr || pw.pw_name == nullptr)
    return {};
  return pw.pw_name;
}

// Whether a user other than `uid` has `gid` as their primary group: such a member is listed
// in the passwd database only, never among the group's members. The database is walked as
// Debian's ssh walks it (getpwent), one walk at a time: the walk's position is process-wide.
bool primary_group_of_another(gid_t gid, uid_t uid) {
  static std::mutex walking;
  const std::lock_guard<std::mutex> hold(walking);
  std::vector<char> buf(16 * 1024);
  passwd pw{}, *found = nullptr;
  bool another = false;
  ::setpwent();
  while (!another && ::getpwent_r(&pw, buf.data(), buf.size(), &found) == 0 && found != nullptr)
    another = pw.pw_gid == gid && pw.pw_uid != uid;
  ::endpwent();
  return another;
}

// A user private group (Debian's and Red Hat's default): named as the user, the user's
// primary group, with no other member — listed in the group, or having it as their own
// primary group. Its write bit lets no one else in, as Debian's ssh also accepts (its
// user-group-modes patch, which checks both kinds of member too).
bool private_group(gid_t gid, uid_t uid) {
  std::vector<char> pbuf(16 * 1024), gbuf(64 * 1024);
  passwd pw{}, *user = nullptr;
  group gr{}, *grp = nullptr;
  if (::getpwuid_r(uid, &pw, pbuf.data(), pbuf.size(), &user) != 0 || user == nullptr) return false;
  if (::getgrgid_r(gid, &gr, gbuf.data(), gbuf.size(), &grp) != 0 || grp == nullptr) return false;
  if (pw.pw_gid != gid || gr.gr_name == nullptr || std::strcmp(gr.gr_name, pw.pw_name) != 0) return false;
  for (char** member = gr.gr_mem; member != nullptr && *member != nullptr; ++member)
    if (std::strcmp(*member, pw.pw_name) != 0) return false;
  return !primary_group_of_another(gid, uid);
}

// Whether `path` has a POSIX access ACL beyond its mode bits. With one, the group bits of the
// mode are the ACL's mask: the most any user or group the ACL names may do, not what the
// owning group may (acl(5)). `setfacl -m u:bob:rwx` on a 0700 directory shows 0770.
bool extended_acl(const std::string& path) {
  return ::lgetxattr(path.c_str(), "system.posix_acl_access", nullptr, 0) >= 0;
}

std::string writers(const std::string& path, const struct stat& st) {
  const bool group = (st.st_mode & S_IWGRP) != 0, others = (st.st_mode & S_IWOTH) != 0;
  const auto* grouped = group && extended_acl(path) ? "the users and groups its ACL names" : "its group";
  return group && others ? fmt::format("{} and others", grouped) : group ? std::string(grouped) : std::string("others");
}

// The private group's write bit lets no one else in, unless an ACL makes that bit its mask:
// then a user or group the ACL names can write too.
bool writable_by_others(const std::string& path, const struct stat& st, uid_t uid) {
  if ((st.st_mode & S_IWOTH) != 0) return true;
  return (st.st_mode & S_IWGRP) != 0 && (!private_group(st.st_gid, uid) || extended_acl(path));
}

bool trusted_owner(uid_t owner, uid_t uid) { return owner == uid || owner == 0; }

// `what PATH` for an option, `what=PATH` for a variable.
std::string setting(std::string_view what, const std::string& path) {
  return what.starts_with("-") ? fmt::format("{} {}", what, path) : fmt::format("{}={}", what, path);
}

struct walk {
  std::string_view what;
  std::string shown;  // the path as the user gave it (absolute), per-user part included
  uid_t uid;

  std::string refuse(std::string_view why, std::string_view fix) const {
    return fmt::format("refusing {} {}: {}; {}", what, shown, why, fix);
  }
  // An ancestor someone else controls: nothing below it is safe, a per-user subdirectory neither.
  std::string refuse_ancestor(const std::string& at, const struct stat& st, std::string_view who) const {
    return refuse(fmt::format("{} is {}, mode {}, so another user could replace what arun keeps below it", at, who,
                              mode_text(st.st_mode)),
                  fmt::format("use a directory outside it that only you can write (arun makes it 0700), e.g. {}",
                              setting(what, "$HOME/arun")));
  }
};

}  // namespace

std::string per_user_name(uid_t uid) {
  auto name = user_name(uid);
  // A name that could leave the directory is no name.
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) return std::to_string(uid);
  return name;
}

std::string mode_text(mode_t mode) { return fmt::format("{:04o}", mode & 07777); }

std::string describe_owner(uid_t uid) {
  const auto name = user_name(uid);
  return name.empty() ? fmt::format("uid {}", uid) : fmt::format("{} (uid {})", name, uid);
}

namespace {

// One existing directory of the path: an error text, or "" (with `per_user` set when it is a
// shared sticky directory whose per-user subdirectory is to be used instead).
std::string judge_directory(walk& w, const std::string& at, const struct stat& st, bool last, bool& per_user) {
  if (!trusted_owner(st.st_uid, w.uid)) {
    if (!last) return w.refuse_ancestor(at, st, "owned by " + describe_owner(st.st_uid));
    const auto parent = fs::path(w.shown).parent_path().string();
    // The per-user subdirectory of a shared one, made first by someone else: no name of it helps.
    if (per_user)
      return w.refuse(fmt::format("it is owned by {}, mode {}, not by you: someone else made your subdirectory first",
                                  describe_owner(st.st_uid), mode_text(st.st_mode)),
                      "have it removed (its owner or root), or use a directory of your own");
    return w.refuse(fmt::format("it is owned by {}, mode {}, not by you", describe_owner(st.st_uid), mode_text(st.st_mode)),
                    fmt::format("use a per-user subdirectory that arun makes 0700, e.g. {}",
                                setting(w.what, (parent == "/" ? "" : parent) + "/" + per_user_name(w.uid))));
  }
  const bool shared = writable_by_others(at, st, w.uid);
  const bool sticky = (st.st_mode & S_ISVTX) != 0;
  if (last && shared && sticky && !per_user) {
    // A shared drop box like /tmp: arun keeps its files in the user's own subdirectory.
    per_user = true;
    return {};
  }
  if (shared && !sticky) {
    const auto who = "writable by " + writers(at, st) + " (owner " + describe_owner(st.st_uid) + ")";
    if (!last) return w.refuse_ancestor(at, st, who);
    return w.refuse(fmt::format("it is {}, mode {}", who, mode_text(st.st_mode)),
                    st.st_uid == w.uid ? fmt::format("make it yours alone (chmod go-w {}) or use another directory", at)
                                       : std::string("use a directory of your own"));
  }
  if (last && st.st_uid != w.uid)
    return w.refuse(fmt::format("it is owned by {}, mode {}, not by you", describe_owner(st.st_uid), mode_text(st.st_mode)),
                    fmt::format("use a per-user subdirectory that arun makes 0700, e.g. {}",
                                setting(w.what, w.shown + "/" + per_user_name(w.uid))));
  return {};
}

// A symlink of the path: its owner checked, its target's components put in front of `rest`
// (from `/` for an absolute one: `real` is reset). An error text or "".
std::string follow_link(const walk& w, const std::string& at, const struct stat& st, std::string& real,
                        std::deque<std::string>& rest, int& links) {
  if (!trusted_owner(st.st_uid, w.uid))
    return w.refuse_ancestor(at + " (a symlink)", st, "owned by " + describe_owner(st.st_uid));
  if (++links > max_links) return w.refuse("too many symlinks", "name the directory itself");
  std::vector<char> target(PATH_MAX + 1);
  const auto n = ::readlink(at.c_str(), target.data(), target.size() - 1);
  if (n < 0) return w.refuse(fmt::format("cannot read the symlink {}: {}", at, std::strerror(errno)), "name the directory itself");
  const fs::path to(std::string(target.data(), static_cast<std::size_t>(n)));
  if (to.is_absolute()) real = "/";
  std::vector<std::string> parts;
  for (const auto& part : to.relative_path()) parts.push_back(part.string());
  rest.insert(rest.begin(), parts.begin(), parts.end());
  return {};
}

}  // namespace

trusted_directory trust_directory(const std::string& path, std::string_view what, trust_mode mode, uid_t uid) {
  std::error_code ec;
  auto absolute = fs::absolute(path.empty() ? "." : path, ec).lexically_normal().string();
  while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
  walk w{what, absolute, uid};
  std::deque<std::string> rest;
  for (const auto& part : fs::path(absolute).relative_path()) rest.push_back(part.string());
  std::string real = "/";  // the components checked so far, links resolved
  bool per_user = false;
  int links = 0;
  while (!rest.empty()) {
    const auto name = std::move(rest.front());
    rest.pop_front();
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      real = fs::path(real).parent_path().string();
      continue;
    }
    const auto next = real == "/" ? "/" + name : real + "/" + name;
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) {
      if (errno != ENOENT) return {w.shown, w.refuse(fmt::format("cannot examine {}: {}", next, std::strerror(errno)), "check its permissions")};
      if (mode == trust_mode::look) return {w.shown, {}};  // nothing there yet: nothing to trust
      // Made by arun, private; one another process made first is judged below like any other.
      if ((::mkdir(next.c_str(), 0700) != 0 && errno != EEXIST) || ::lstat(next.c_str(), &st) != 0)
        return {w.shown, fmt::format("cannot create {} for {} {}: {}", next, what, w.shown, std::strerror(errno))};
    }
    std::string error;
    if (S_ISLNK(st.st_mode)) {
      if (error = follow_link(w, next, st, real, rest, links); !error.empty()) return {w.shown, error};
      continue;
    }
    if (!S_ISDIR(st.st_mode)) return {w.shown, w.refuse(next + " is not a directory", "name a directory")};
    const bool was_per_user = per_user;
    if (error = judge_directory(w, next, st, rest.empty(), per_user); !error.empty()) return {w.shown, error};
    if (per_user && !was_per_user) {
      w.shown += "/" + per_user_name(uid);
      rest.push_back(per_user_name(uid));
    }
    real = next;
  }
  return {w.shown, {}};
}

trusted_directory trust_directory(const std::string& path, std::string_view what, trust_mode mode) {
  return trust_directory(path, what, mode, ::geteuid());
}

std::string per_user_path(const std::string& path, uid_t uid) {
  return trust_directory(path, "", trust_mode::look, uid).path;
}

std::string make_directory_exclusively(const std::string& path, uid_t uid) {
  if (::mkdir(path.c_str(), 0700) != 0) return fmt::format("cannot create {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fmt::format("cannot examine {}: {}", path, std::strerror(errno));
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0)
    return fmt::format("{} is not the private directory arun just made (owner {}, mode {})", path,
                       describe_owner(st.st_uid), mode_text(st.st_mode));
  return {};
}

}  // namespace arun::io
