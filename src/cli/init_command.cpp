// `arun init [NAME]`: writes a commented starter recipe that validates and runs as it is.
#include "commands.hpp"
#include "exit_codes.hpp"

#include "files/fd_write.hpp"
#include "files/install_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace arun::cli {
namespace fs = std::filesystem;

namespace {

// The starter: one of each thing a new recipe usually needs, each line saying what it does.
// It names no path of this machine: the file is committed and read by others, whose arun (and
// its schema) is installed elsewhere. Editors find the schema through their own settings
// (docs/running.md, "Editor support"); the path is printed on stderr instead.
constexpr const char* starter_template = R"(# {name}: a recipe for arun. Run it:       arun {file}
#                                 check it:     arun validate {file}
#                                 see the plan: arun explain {file}
# Steps run one after the other; each `command` runs with bash in the directory arun was
# started in (-C DIR changes it). The manual: `man arun`, and docs/ in arun's sources.
# Editors complete and check recipes once arun's JSON Schema is mapped to them in the editor's
# settings (docs/running.md, "Editor support"; `man arun`, FILES, says where the schema is).
name: "{name}"
description: What this recipe does, in one line.
version: "1.0.0"

# Values the steps can use as {{{{name}}}}; override any of them with --set who=Ada.
context:
  who: world
  files: [a.txt, b.txt]

steps:
  - id: greet
    # A value reaches bash as an exported variable, never pasted into the command text, so
    # quotes or $(...) in it are printed, not run.
    command: echo "Hello, {{{{who}}}}!"

  - id: count
    # What a step prints on stdout (trimmed) is its output; `output:` keeps it in the context
    # under that name, typed when it reads as JSON (here a number).
    command: ls | wc -l
    output: entry_count

  - id: report
    # A step with a condition runs only when it is true (docs: the condition language).
    condition: "entry_count > 0"
    command: echo "this directory has {{{{entry_count}}}} entries"

  - id: each-file
    # foreach runs the step once per item, one item at a time; `parallel: 4` would run up to
    # 4 at once (`parallel: true`: up to --max-concurrent). The item is {{{{file}}}}. Failing
    # items do not stop the others here.
    foreach: "{{{{files}}}}"
    as: file
    command: echo "would process {{{{file}}}}"
    continue_on_error: true
)";

std::string recipe_file_name(const std::string& name) {
  if (name.ends_with(".yaml") || name.ends_with(".yml")) return name;
  return name + ".yaml";
}

}  // namespace

int init_command(const init_settings& s) {
  const fs::path file = recipe_file_name(s.name.empty() ? "recipe" : s.name);
  const std::string recipe_name = file.stem().string();
  // The file's stem becomes the recipe's name, so it must be one discovery can find by name and
  // the schema accepts: letters, digits, '_' and '-', not starting with '-' (an option).
  constexpr std::size_t longest_name = 100;
  const bool usable = !recipe_name.empty() && recipe_name.size() <= longest_name && recipe_name.front() != '-' &&
                      std::all_of(recipe_name.begin(), recipe_name.end(), [](unsigned char c) {
                        return std::isalnum(c) || c == '-' || c == '_';
                      });
  if (!usable) {
    std::fprintf(stderr,
                 "arun: '%s' cannot name a recipe: use letters, digits, '_' and '-' (not first), at most %zu "
                 "characters\n",
                 recipe_name.c_str(), longest_name);
    return exit_usage;
  }
  const auto text = fmt::format(fmt::runtime(starter_template), fmt::arg("name", recipe_name),
                                fmt::arg("file", file.string()));
  // Never through a symbolic link, never over an existing file unless --force, and never into
  // something that is not a regular file (O_NONBLOCK: a FIFO of that name must not hang us).
  const int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (s.force ? 0 : O_EXCL);
  const int fd = ::open(file.c_str(), flags, 0644);
  if (fd < 0 && errno == EEXIST) {
    std::fprintf(stderr, "arun: %s already exists; choose another NAME, or --force to overwrite it\n", file.c_str());
    return exit_usage;
  }
  struct stat st{};
  // ENXIO: a FIFO nobody reads (O_NONBLOCK refuses to wait for one).
  if ((fd < 0 && errno == ENXIO) || (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)))) {
    if (fd >= 0) ::close(fd);
    std::fprintf(stderr, "arun: %s exists and is not a regular file\n", file.c_str());
    return exit_usage;
  }
  int error = fd < 0 ? errno : (::ftruncate(fd, 0) == 0 ? io::write_all(fd, text) : errno);
  if (fd >= 0 && ::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    std::fprintf(stderr, "arun: cannot write %s: %s\n", file.c_str(), std::strerror(error));
    return exit_output_failed;
  }
  std::fprintf(stderr, "arun: wrote %s; run it with: arun %s\n", file.c_str(), file.c_str());
  // This machine's schema path goes here, not into the file (see starter_template).
  const auto schema = io::locate_recipe_schema(io::running_binary());
  if (!schema.path.empty())
    std::fprintf(stderr, "arun: editors: map %s to your recipe files for completion and checks as you type "
                         "(docs/running.md, \"Editor support\")\n",
                 schema.path.c_str());
  else
    std::fprintf(stderr, "arun: note: arun's JSON Schema was not found beside the binary (looked in %s); "
                         "editors will not check the recipe as you type\n",
                 fmt::format("{}", fmt::join(schema.looked_in, ", ")).c_str());
  return exit_success;
}

}  // namespace arun::cli
