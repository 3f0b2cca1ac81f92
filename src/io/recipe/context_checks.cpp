#include "recipe/context_checks.hpp"

#include "recipe/discovery.hpp"

#include <arun/value_format.hpp>

#include <filesystem>

namespace arun::io {

namespace fs = std::filesystem;

namespace {

bool empty_value(const boost::json::value* v) {
  if (!v || v->is_null()) return true;
  if (const auto* s = v->if_string()) return s->find_first_not_of(" \t\r\n") == boost::json::string::npos;
  if (const auto* a = v->if_array()) return a->empty();
  if (const auto* o = v->if_object()) return o->empty();
  return false;
}

}  // namespace

std::vector<std::string> check_context(const recipe& r, const std::string& working_dir) {
  std::vector<std::string> problems;
  for (const auto& [name, check] : r.context_validation) {
    if (check == context_check::optional) continue;
    const auto* value = r.context.if_contains(name);
    const std::string subject = "context variable '" + name + "'";
    if (empty_value(value)) {
      problems.push_back(subject + " must be set and non-empty (pass --set " + name + "=...)");
      continue;
    }
    if (check == context_check::nonempty) continue;
    if (!value->is_string()) {
      problems.push_back(subject + " must be a path, got " + to_compact_json(*value));
      continue;
    }
    fs::path p(std::string(value->get_string()));
    if (p.is_relative()) p = fs::path(working_dir) / p;
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      problems.push_back(subject + ": path '" + p.string() + "' does not exist");
      continue;
    }
    if (check == context_check::git_repo) {
      const auto dir = fs::is_directory(p, ec) ? p : p.parent_path();
      if (git_work_tree(fs::absolute(dir, ec).string()).empty())
        problems.push_back(subject + ": '" + p.string() + "' is not inside a git repository");
    }
  }
  return problems;
}

}  // namespace arun::io
