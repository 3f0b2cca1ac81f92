#include "executor/shell_exports.hpp"

namespace arun::io {

std::string single_quote(std::string_view text) {
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

shell_exports::shell_exports(std::vector<shell_export> variables, std::string_view prefix,
                             value_files* shared) {
  for (auto& v : variables) {
    if (!v.by_file) {
      environment_.emplace_back(std::move(v.name), std::move(v.value));
      continue;
    }
    // A throw here destroys files_ with the files written so far.
    files_.push_back(shared ? shared->file_for(v.value, prefix)
                            : std::make_shared<const private_temp_file>(prefix, v.value));
    // `unset` first: a variable inherited from the environment would stay exported.
    // LC_ALL=C: in a UTF-8 locale, bash's `read` drops a \x01 that follows an invalid
    // multibyte sequence. `$(cat FILE)` would strip trailing newlines.
    preamble_ += "unset -v " + v.name + "; LC_ALL=C IFS= read -r -d '' " + v.name + " < " +
                 single_quote(files_.back()->path()) + " || true; ";
  }
}

std::string shell_exports::wrap(std::string_view script) const {
  std::string body = preamble_;
  body += script;
  return body;
}

std::vector<std::string> shell_exports::file_paths() const {
  std::vector<std::string> paths;
  for (const auto& f : files_) paths.push_back(f->path());
  return paths;
}

}  // namespace arun::io
