#pragma once
// A fresh directory under the system temp dir for one test, removed with the object.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace arun::test {

struct temp_dir {
  std::filesystem::path root;

  explicit temp_dir(const std::string& tag = "arun-test") {
    static int n = 0;
    root = std::filesystem::temp_directory_path() / (tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }

  /// Writes `text` to `rel` below the root (parents created); returns the full path.
  std::string write(const std::string& rel, const std::string& text) const {
    const auto p = root / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
};

}  // namespace arun::test
