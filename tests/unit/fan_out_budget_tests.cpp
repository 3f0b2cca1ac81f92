// How a fan-out's throttle is shared between its job arrays: never more units out than the
// throttle, a part submitted with the units free at the time, spare units of a draining part
// going to the parts behind it in order.
#include <catch2/catch.hpp>

#include "executor/fan_out_budget.hpp"

#include <cstddef>
#include <vector>

using arun::io::fan_out_budget;

namespace {

int held_in_total(const fan_out_budget& b, std::size_t parts) {
  int sum = 0;
  for (std::size_t i = 0; i < parts; ++i) sum += b.held(i);
  return sum;
}

}  // namespace

TEST_CASE("fan-out budget: the first part takes the throttle and the next waits for spare units") {
  fan_out_budget b(4);
  CHECK(b.add(10) == 0);
  CHECK(b.add(10) == 1);
  auto grants = b.share_out();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].part == 0);
  CHECK(grants[0].limit == 4);
  CHECK(grants[0].first);
  CHECK(b.free_units() == 0);
  // Six of part 0's jobs end: it still has four left, so it keeps its four units.
  for (int i = 0; i < 6; ++i) b.finished(0);
  CHECK(b.share_out().empty());
  // The seventh: three left, one unit spare, and part 1 is submitted with it.
  b.finished(0);
  grants = b.share_out();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].part == 1);
  CHECK(grants[0].limit == 1);
  CHECK(grants[0].first);
  // The rest of part 0 drains: part 1's limit is raised unit by unit, never past the throttle.
  for (int i = 0; i < 3; ++i) {
    b.finished(0);
    grants = b.share_out();
    REQUIRE(grants.size() == 1);
    CHECK(grants[0].part == 1);
    CHECK(grants[0].limit == 2 + i);
    CHECK_FALSE(grants[0].first);
    CHECK(held_in_total(b, 2) <= 4);
  }
  CHECK_FALSE(b.drained());
  for (int i = 0; i < 10; ++i) b.finished(1);
  CHECK(b.drained());
  CHECK(b.free_units() == 4);
}

TEST_CASE("fan-out budget: small parts get what they can use and the rest goes further down") {
  fan_out_budget b(5);
  b.add(2);  // late retries: parts of one or two jobs
  b.add(1);
  b.add(10);
  const auto grants = b.share_out();
  REQUIRE(grants.size() == 3);
  CHECK(grants[0].limit == 2);
  CHECK(grants[1].limit == 1);
  CHECK(grants[2].limit == 2);
  CHECK(b.free_units() == 0);
  b.finished(1);  // the single job ends: its unit goes to the big part
  const auto more = b.share_out();
  REQUIRE(more.size() == 1);
  CHECK(more[0].part == 2);
  CHECK(more[0].limit == 3);
}

TEST_CASE("fan-out budget: a throttle below one is one and a job ending twice is counted once") {
  fan_out_budget b(0);
  b.add(1);
  CHECK(b.share_out().at(0).limit == 1);
  b.finished(0);
  b.finished(0);
  CHECK(b.free_units() == 1);
  CHECK(b.drained());
}

TEST_CASE("fan-out budget: an earlier arun's arrays keep their running tasks' units and are served first") {
  // Resumed at -j 4 after a crash: array A has 3 of its 5 jobs running, array B 1 of 3;
  // the new part waits until their jobs end, whatever order the parts came in.
  fan_out_budget b(4);
  CHECK(b.add(10) == 0);
  CHECK(b.add_adopted(5, 3) == 1);
  CHECK(b.add_adopted(3, 1) == 2);
  CHECK(b.limit(1) == 3);
  CHECK(b.limit(2) == 1);
  CHECK(b.free_units() == 0);
  CHECK(b.share_out().empty());  // the new part gets nothing: 4 run already
  // One of B's ends: it has 2 left and keeps its unit; one of A's: its 4 left keep 3.
  b.finished(2);
  b.finished(1);
  CHECK(b.share_out().empty());
  // A drains to 2 jobs: one unit spare, and B (an earlier array) gets it before the new part.
  b.finished(1);
  b.finished(1);
  auto grants = b.share_out();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].part == 2);
  CHECK(grants[0].limit == 2);
  CHECK_FALSE(grants[0].first);  // in the queue already: its limit is raised, never submitted
  CHECK(held_in_total(b, 3) == 4);
}

TEST_CASE("fan-out budget: an earlier array running past a lower throttle starts nothing until it is below") {
  // Resumed at -j 2: 4 of the array's 8 jobs run. Its limit is 2, and the units of the two
  // running past it come back as they end, without letting a task of it start.
  fan_out_budget b(2);
  CHECK(b.add_adopted(8, 4) == 0);
  CHECK(b.add(5) == 1);
  CHECK(b.limit(0) == 2);
  CHECK(b.free_units() == -2);
  CHECK(b.share_out().empty());
  b.finished(0);
  b.finished(0);
  CHECK(b.free_units() == 0);
  CHECK(b.limit(0) == 2);
  CHECK(b.share_out().empty());
  // Pending only, no unit free: one unit all the same (Slurm has no task limit of 0).
  fan_out_budget full(1);
  CHECK(full.add_adopted(3, 1) == 0);
  CHECK(full.add_adopted(4, 0) == 1);
  CHECK(full.limit(1) == 1);
  CHECK(full.free_units() == -1);
}

TEST_CASE("fan-out budget: an earlier array whose limit cannot be set holds a unit for each job it has left") {
  fan_out_budget b(4);
  CHECK(b.add_adopted(6, 1) == 0);
  CHECK(b.add(6) == 1);
  b.uncontrolled(0);
  CHECK(b.held(0) == 6);
  CHECK(b.free_units() == -2);
  CHECK(b.share_out().empty());
  for (int i = 0; i < 3; ++i) b.finished(0);
  auto grants = b.share_out();
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].part == 1);
  CHECK(grants[0].limit == 1);
  CHECK(grants[0].first);
}
