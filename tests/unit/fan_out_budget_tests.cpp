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
