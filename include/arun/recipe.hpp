#pragma once
/// The recipe model (SPEC §2, §3): what the loader produces and the engine runs.
/// It grows with the language; fields here are the ones the engine honours today.

#include <boost/json/object.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace arun {

/// Where something was written, for diagnostics. Lines and columns are 1-based; 0 = unknown.
struct source_location {
  std::string file;
  int line = 0;
  int column = 0;
};

enum class step_type { bash };

/// One declared step.
struct step {
  std::string id;
  step_type type = step_type::bash;
  std::string command;                                     ///< bash body
  std::optional<std::string> output;                       ///< context variable receiving the output
  std::optional<std::chrono::duration<double>> timeout;    ///< 0 = no limit (SPEC §3.1)
  std::string working_dir;                                 ///< relative to the run's working dir
  std::vector<std::pair<std::string, std::string>> env;    ///< in declaration order
  source_location where;
};

struct recipe {
  std::string name;
  std::string description;
  std::string version = "1.0.0";
  boost::json::object context;
  std::vector<step> steps;
  std::optional<std::chrono::duration<double>> default_step_timeout;
  std::string source_path;
};

}  // namespace arun
