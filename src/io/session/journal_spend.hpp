#pragma once
// What a session's agent calls cost, read back from its journal for a resume (docs/sessions.md,
// "The budget is the session's"). A call's usage is journaled as a usage line the moment it is
// known, and an instance's record then carries the sum of its calls again. An older arun wrote
// only the records; a crash can damage a line. So the spend is the usage lines, plus the
// records no line stands for — leaves only, since a loop's or a sub-recipe's record sums its
// instances' — and, where a line of an instance is damaged, its record's sum instead of its
// lines. Each call is counted once.

#include <arun/results.hpp>

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace arun::io {

class journal_spend {
public:
  /// An intact usage line of `instance`.
  void usage_line(const std::string& instance, const agent_usage& call);
  /// A usage line that does not read back at `line_number`; `instance` when its JSON still
  /// names it (its record may then stand for it), else empty.
  void damaged_line(const std::string& instance, std::size_t line_number);
  /// An instance's record and the usage it carries.
  void record(const std::string& instance, const agent_usage* usage);

  /// Whether the journal holds any spend at all (lines, damage or records with usage).
  bool any() const noexcept { return any_; }
  /// The spend, summed per provider and model.
  std::vector<agent_usage> total() const;
  /// Damaged lines whose cost no record stands for: lost.
  std::vector<std::size_t> lost_lines() const;

private:
  bool any_ = false;
  std::vector<agent_usage> counted_;
  std::map<std::string, std::vector<agent_usage>, std::less<>> pending_;  // lines since the instance's last record
  std::map<std::string, std::vector<std::size_t>, std::less<>> damaged_;  // damaged lines since its last record
  std::vector<std::size_t> lost_;                                          // damaged lines no record stood for
  std::set<std::string, std::less<>> with_lines_;                          // instances with usage lines
  std::map<std::string, agent_usage, std::less<>> record_only_;           // records no line stands for
};

}  // namespace arun::io
