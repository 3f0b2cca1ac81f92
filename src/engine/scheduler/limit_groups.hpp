#pragma once
// Per-provider limits: children at once of one agent provider (claude, codex, …) or of a
// step's `limit_group`, on top of the run's global limit. Rate limits are per account, so a
// provider's limit adapts (AIMD): a rate-limited reply halves its effective limit (never
// below 1) and every clean completion adds one back, up to the configured limit. A group
// nobody configured has no limit of its own until its first rate limit; it then adapts
// from half of what was running, up to --max-concurrent.

#include "scheduler/limiter.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

namespace arun::engine {

/// One group's state, as events report it.
struct limit_group_view {
  std::string_view name;
  int running = 0;
  int limit = 0;                  ///< effective; 0: no limit of its own
  std::optional<int> configured;  ///< `limits:` / --limit
};

class limit_groups;

/// A slot of one group, held while a child runs; tells the group how the child ended.
class group_lease {
public:
  group_lease() = default;
  group_lease(limit_groups& owner, std::string_view group, std::uint64_t epoch) noexcept
      : owner_(&owner), group_(group), epoch_(epoch) {}
  group_lease(group_lease&& other) noexcept;
  group_lease& operator=(group_lease&& other) noexcept;
  group_lease(const group_lease&) = delete;
  group_lease& operator=(const group_lease&) = delete;
  ~group_lease() { release(); }

  /// The child ended in a rate limit (`true`) or cleanly; gives the slot back.
  void finish(bool rate_limited) noexcept;
  void release() noexcept;
  bool held() const noexcept { return owner_ != nullptr; }

private:
  limit_groups* owner_ = nullptr;
  std::string_view group_;  ///< the group's name, owned by limit_groups
  std::uint64_t epoch_ = 0;
};

class limit_groups {
public:
  /// Called when a group's effective limit changes: (view, why).
  using change_handler = std::function<void(const limit_group_view&, std::string_view why)>;

  limit_groups(const boost::asio::any_io_executor& ex, std::map<std::string, int, std::less<>> configured,
               int ceiling, change_handler on_change);

  /// Whether `group` has a configured limit.
  bool configured(std::string_view group) const;
  /// Adds a limit for a group nobody configured yet (a sub-recipe's `limits:`).
  void configure_if_absent(std::string_view group, int limit);

  /// Waits for a slot of `group` (none: `group` is empty); false, holding nothing, when
  /// `stop` is requested first.
  boost::asio::awaitable<bool> acquire(std::string_view group, group_lease& lease, std::stop_token stop);

  /// The group's running count and limit (a group never used: zeros).
  limit_group_view view(std::string_view group) const;

private:
  friend class group_lease;
  struct state {
    std::string name;
    std::optional<int> configured;
    /// An unconfigured group's limit is the ceiling, which never binds: every child of the
    /// group also holds at least one of the ceiling's global slots.
    concurrency_limiter limiter;
    /// Bumped on every decrease: the calls that started before it were answered by it, so
    /// a burst of rate limits from one round halves the limit once, not once per call.
    std::uint64_t epoch = 0;
  };
  state& group(std::string_view name);
  int cap(const state& g) const noexcept { return g.configured.value_or(ceiling_); }
  limit_group_view view(const state& g) const noexcept;
  void finish(std::string_view group, std::uint64_t epoch, bool rate_limited, bool judged) noexcept;

  boost::asio::any_io_executor executor_;
  int ceiling_;  ///< what an unconfigured group grows back to: --max-concurrent
  change_handler on_change_;
  std::map<std::string, std::unique_ptr<state>, std::less<>> groups_;
};

}  // namespace arun::engine
