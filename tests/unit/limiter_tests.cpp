// The run's weighted concurrency limit, driven step by step on an io_context: weights are
// clamped to the limit, waiters are served first come first served (a light waiter never
// overtakes a heavy one queued before it), a stop ends a wait holding nothing.
#include <catch2/catch.hpp>

#include "scheduler/limiter.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace asio = boost::asio;
using arun::engine::concurrency_limiter;
using arun::engine::slot_lease;

namespace {

asio::awaitable<void> acquire_into(concurrency_limiter& limiter, std::stop_token stop, int weight,
                                   std::optional<bool>& result, std::vector<std::string>& order, std::string name) {
  const bool ok = co_await limiter.acquire(stop, weight);
  result = ok;
  if (ok) order.push_back(std::move(name));
}

// One limiter and the acquirers it serves; pump() runs every ready handler and returns.
struct bench {
  asio::io_context ctx;
  concurrency_limiter limiter;
  std::vector<std::string> order;  // who got their slots, in the order they got them

  explicit bench(int slots) : limiter(ctx.get_executor(), slots) {}

  void pump() {
    ctx.restart();
    ctx.poll();
  }

  // Starts acquire(stop, weight) and runs until it waits or has its slots.
  void start(std::optional<bool>& result, int weight, std::string name, std::stop_token stop = {}) {
    asio::co_spawn(ctx, acquire_into(limiter, stop, weight, result, order, std::move(name)), asio::detached);
    pump();
  }
};

}  // namespace

TEST_CASE("limiter clamps a weight to between one slot and the limit", "[limiter]") {
  bench b(3);
  CHECK(b.limiter.limit() == 3);
  CHECK(b.limiter.slots_for(1) == 1);
  CHECK(b.limiter.slots_for(2) == 2);
  CHECK(b.limiter.slots_for(3) == 3);
  CHECK(b.limiter.slots_for(16) == 3);
  CHECK(b.limiter.slots_for(0) == 1);
  CHECK(b.limiter.slots_for(-4) == 1);

  // A weight above the limit takes every slot, does not wait forever, and gives them back.
  std::optional<bool> greedy;
  b.start(greedy, 16, "greedy");
  CHECK(greedy == true);
  CHECK(b.limiter.in_use() == 3);
  std::optional<bool> next;
  b.start(next, 1, "next");
  CHECK_FALSE(next.has_value());
  b.limiter.release(16);
  b.pump();
  CHECK(next == true);
  CHECK(b.limiter.in_use() == 1);

  bench none(0);
  CHECK(none.limiter.limit() == 1);  // a limit below one is one slot
}

TEST_CASE("limiter makes a weight that does not fit wait until a release", "[limiter]") {
  bench b(3);
  std::optional<bool> first, second;
  b.start(first, 2, "first");
  CHECK(first == true);
  CHECK(b.limiter.in_use() == 2);
  b.start(second, 2, "second");
  CHECK_FALSE(second.has_value());  // 2 + 2 > 3
  CHECK(b.limiter.in_use() == 2);
  b.pump();
  CHECK_FALSE(second.has_value());
  b.limiter.release(2);
  b.pump();
  CHECK(second == true);
  CHECK(b.limiter.in_use() == 2);
  CHECK(b.order == std::vector<std::string>{"first", "second"});
}

TEST_CASE("limiter serves waiters first come first served: a light one does not overtake", "[limiter]") {
  bench b(2);
  std::optional<bool> holder, heavy, light;
  b.start(holder, 1, "holder");
  REQUIRE(holder == true);
  b.start(heavy, 2, "heavy");  // needs both slots: waits for the holder
  b.start(light, 1, "light");  // would fit now, but the heavy one came first
  CHECK_FALSE(heavy.has_value());
  CHECK_FALSE(light.has_value());
  CHECK(b.limiter.in_use() == 1);

  b.limiter.release(1);  // the holder's
  b.pump();
  CHECK(heavy == true);
  CHECK_FALSE(light.has_value());
  CHECK(b.limiter.in_use() == 2);

  b.limiter.release(2);  // the heavy one's
  b.pump();
  CHECK(light == true);
  CHECK(b.limiter.in_use() == 1);
  CHECK(b.order == std::vector<std::string>{"holder", "heavy", "light"});
  CHECK(b.limiter.peak() == 2);
}

TEST_CASE("limiter releases several waiters at once when they all fit", "[limiter]") {
  bench b(3);
  std::optional<bool> big, x, y, z;
  b.start(big, 3, "big");
  b.start(x, 1, "x");
  b.start(y, 1, "y");
  b.start(z, 2, "z");
  b.limiter.release(3);
  b.pump();
  CHECK(x == true);
  CHECK(y == true);
  CHECK_FALSE(z.has_value());  // 1 + 1 + 2 > 3
  CHECK(b.limiter.in_use() == 2);
  b.limiter.release(1);
  b.pump();
  CHECK(z == true);
  CHECK(b.limiter.in_use() == 3);
  CHECK(b.order == std::vector<std::string>{"big", "x", "y", "z"});
}

TEST_CASE("limiter stop while waiting returns false holding nothing and lets the next waiter in", "[limiter]") {
  bench b(2);
  std::optional<bool> holder, heavy, light;
  std::stop_source stop_heavy;
  b.start(holder, 1, "holder");
  b.start(heavy, 2, "heavy", stop_heavy.get_token());
  b.start(light, 1, "light");
  REQUIRE_FALSE(heavy.has_value());
  REQUIRE_FALSE(light.has_value());

  stop_heavy.request_stop();
  b.pump();
  CHECK(heavy == false);
  CHECK(light == true);               // no longer behind the heavy one: it fits
  CHECK(b.limiter.in_use() == 2);     // the holder's and the light one's, nothing of the heavy one's
  CHECK(b.order == std::vector<std::string>{"holder", "light"});

  b.limiter.release(1);
  b.limiter.release(1);
  CHECK(b.limiter.in_use() == 0);
  // The stopped waiter left no trace in the queue: a new acquire gets its slots at once.
  std::optional<bool> later;
  b.start(later, 2, "later");
  CHECK(later == true);
  CHECK(b.limiter.in_use() == 2);
}

TEST_CASE("limiter stop of the only waiter leaves the slots as they were", "[limiter]") {
  bench b(1);
  std::optional<bool> holder, waiter;
  std::stop_source stop;
  b.start(holder, 1, "holder");
  b.start(waiter, 1, "waiter", stop.get_token());
  REQUIRE_FALSE(waiter.has_value());
  stop.request_stop();
  b.pump();
  CHECK(waiter == false);
  CHECK(b.limiter.in_use() == 1);
  b.limiter.release(1);
  b.pump();
  CHECK(b.limiter.in_use() == 0);  // the stopped waiter was not handed the released slot
  CHECK(waiter == false);

  // Stopped before it starts: false at once, nothing taken even with slots free.
  std::optional<bool> early;
  b.start(early, 1, "early", stop.get_token());
  CHECK(early == false);
  CHECK(b.limiter.in_use() == 0);
  CHECK(b.order == std::vector<std::string>{"holder"});
}

TEST_CASE("limiter peak is the most slots held at once", "[limiter]") {
  bench b(4);
  CHECK(b.limiter.peak() == 0);
  std::optional<bool> a, c, d, e;
  b.start(a, 1, "a");
  CHECK(b.limiter.peak() == 1);
  b.start(c, 2, "c");
  CHECK(b.limiter.peak() == 3);
  b.limiter.release(2);
  CHECK(b.limiter.in_use() == 1);
  CHECK(b.limiter.peak() == 3);  // not lowered by a release
  b.start(d, 3, "d");
  CHECK(b.limiter.in_use() == 4);
  CHECK(b.limiter.peak() == 4);
  b.start(e, 1, "e");
  CHECK_FALSE(e.has_value());
  CHECK(b.limiter.peak() == 4);  // a waiter holds nothing
  b.limiter.release(3);
  b.limiter.release(1);
  b.pump();
  CHECK(b.limiter.in_use() == 1);
  CHECK(b.limiter.peak() == 4);
}

TEST_CASE("limiter slot_lease gives back its weight", "[limiter]") {
  bench b(4);
  std::optional<bool> a;
  b.start(a, 3, "a");
  REQUIRE(b.limiter.in_use() == 3);
  {
    slot_lease lease(b.limiter, 3);
  }
  CHECK(b.limiter.in_use() == 0);
  std::optional<bool> c;
  b.start(c, 8, "c");  // clamped to 4 on the way in and on the way out
  CHECK(b.limiter.in_use() == 4);
  {
    slot_lease lease(b.limiter, 8);
  }
  CHECK(b.limiter.in_use() == 0);
}

// A waiter that has been handed its slots but not resumed yet is still in the queue. A new
// acquire in that window must not wait behind it while slots are free (with nothing left to
// release them to it, it would wait until the granted waiter's work ends).
TEST_CASE("limiter newcomer is not held back by a granted waiter that has not resumed", "[limiter]") {
  bench b(2);
  std::optional<bool> heavy, waiter, again;
  b.start(heavy, 2, "heavy");
  b.start(waiter, 1, "waiter");
  REQUIRE_FALSE(waiter.has_value());
  // What a leaf's branch does when its leaf ends and the next one starts in the same handler:
  // release, then acquire at once.
  asio::co_spawn(
      b.ctx,
      [&]() -> asio::awaitable<void> {
        b.limiter.release(2);  // the waiter is granted 1 slot; 1 is free
        const bool ok = co_await b.limiter.acquire({}, 1);
        again = ok;
      },
      asio::detached);
  b.pump();
  CHECK(waiter == true);
  CHECK(again == true);
  CHECK(b.limiter.in_use() == 2);
}
