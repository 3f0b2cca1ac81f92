#include "session_argument.hpp"

#include "files/directory_trust.hpp"
#include "session/session_lookup.hpp"
#include "session/session_store.hpp"

#include <cstdio>

namespace arun::cli {

std::optional<named_session> find_named_session(const std::string& session_dir, const std::string& given) {
  const auto root = io::checked_session_root(session_dir, io::trust_mode::look);
  if (!root.ok()) {
    std::fprintf(stderr, "arun: %s\n", root.error.c_str());
    return std::nullopt;
  }
  auto found = io::find_session(root.path, given);
  if (!found.error.empty()) {
    std::fprintf(stderr, "arun: %s\n", found.error.c_str());
    return std::nullopt;
  }
  return named_session{root.path, std::move(found.id), given == "last" || given == "-"};
}

}  // namespace arun::cli
