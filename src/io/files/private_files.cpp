#include "files/private_files.hpp"

#include <filesystem>
#include <vector>

namespace arun::io {
namespace fs = std::filesystem;

bool make_private_directories(const std::string& path, std::error_code& ec) {
  std::vector<fs::path> made;
  for (auto p = fs::path(path); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    made.push_back(p);
    if (p == p.parent_path()) break;
  }
  ec.clear();
  fs::create_directories(path, ec);
  if (ec) return false;
  for (const auto& p : made) fs::permissions(p, fs::perms::owner_all, fs::perm_options::replace, ec);
  ec.clear();
  return true;
}

std::string file_name_part(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) c = '_';
  }
  if (!out.empty() && out.front() == '.') out.front() = '_';
  return out;
}

}  // namespace arun::io
