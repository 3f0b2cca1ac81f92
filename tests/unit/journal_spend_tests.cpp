// A session's spend read back from its journal (src/io/session/journal_spend.hpp): usage lines,
// records no line stands for (leaves only), and damaged lines a record stands for; each call
// counted once, whatever the journal's history (an older arun's records, resumes, damage).
#include <catch2/catch.hpp>

#include "session/journal_spend.hpp"

using namespace arun;
using arun::io::journal_spend;

namespace {

agent_usage calls(int n, double cost) {
  agent_usage u;
  u.provider = "claude";
  u.model = "m1";
  u.calls = static_cast<std::uint64_t>(n);
  u.cost_usd = cost;
  return u;
}

// An instance's record carrying `usage`.
void record(journal_spend& s, const std::string& instance, const agent_usage& usage) { s.record(instance, &usage); }

// The one total's calls and cost.
std::pair<std::uint64_t, double> summed(const journal_spend& s) {
  const auto t = s.total();
  REQUIRE(t.size() == 1);
  return {t[0].calls, t[0].cost_usd.value_or(-1)};
}

}  // namespace

TEST_CASE("journal spend: usage lines count, the records after them do not count again") {
  journal_spend s;
  s.usage_line("a", calls(1, 0.01));
  s.usage_line("a", calls(1, 0.01));  // a schema correction
  record(s, "a", calls(2, 0.02));
  s.usage_line("fan[0]", calls(1, 0.01));
  record(s, "fan[0]", calls(1, 0.01));
  record(s, "fan", calls(1, 0.01));  // a loop's record sums its items'
  s.usage_line("b", calls(1, 0.04));                // killed before its record
  CHECK(s.any());
  const auto [n, cost] = summed(s);
  CHECK(n == 4);
  CHECK(cost == Approx(0.07));
  CHECK(s.lost_lines().empty());
}

TEST_CASE("journal spend: records an older arun wrote count as leaves, beside the lines of a later run") {
  journal_spend s;
  // The older arun: records only (two items, then their loop), and a call that failed fatally.
  record(s, "fan[0]", calls(1, 0.01));
  record(s, "fan[1]", calls(1, 0.01));
  record(s, "fan", calls(2, 0.02));
  record(s, "a", calls(1, 0.05));
  // A later arun ran `a` again: its line, then its record.
  s.usage_line("a", calls(1, 0.05));
  record(s, "a", calls(1, 0.05));
  const auto [n, cost] = summed(s);
  CHECK(n == 4);  // fan[0], fan[1], a twice; never the loop's sum
  CHECK(cost == Approx(0.12));
  journal_spend none;
  none.record("x", nullptr);
  CHECK_FALSE(none.any());
}

TEST_CASE("journal spend: a damaged line's instance is counted by its record, else the line is lost") {
  journal_spend s;
  s.damaged_line("a", 1);
  s.usage_line("a", calls(1, 0.01));
  record(s, "a", calls(2, 0.02));  // both calls, the damaged one included
  s.damaged_line("b", 4);                          // no record follows
  s.damaged_line("", 5);                           // names nothing readable
  const auto [n, cost] = summed(s);
  CHECK(n == 2);
  CHECK(cost == Approx(0.02));
  CHECK(s.lost_lines() == std::vector<std::size_t>{4, 5});
}
