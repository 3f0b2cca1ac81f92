#include "executor/slurm_licenses.hpp"

#include "executor/slurm_clients.hpp"
#include "output/arun_log.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace arun::io {
namespace asio = boost::asio;

namespace {
// Outside the coroutine: g++ 12 cannot keep a braced list of strings in a coroutine frame.
std::vector<std::string> show_licenses() { return {"scontrol", "show", "licenses", "--oneliner"}; }
}  // namespace

std::set<std::string, std::less<>> parse_license_names(std::string_view text) {
  std::set<std::string, std::less<>> names;
  constexpr std::string_view key = "LicenseName=";
  for (auto at = text.find(key); at != std::string_view::npos; at = text.find(key, at)) {
    at += key.size();
    const auto end = text.find_first_of(" \t\r\n", at);
    auto name = text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (!name.empty()) names.emplace(name);
  }
  return names;
}

asio::awaitable<bool> slurm_licenses::defines(std::string name) {
  if (state_ == state::asking) {
    asio::steady_timer answered(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
    waiting_.push_back(&answered);
    co_await answered.async_wait(asio::as_tuple(asio::use_awaitable));
    std::erase(waiting_, &answered);  // still listed when this job was cancelled meanwhile
  } else if (state_ == state::unknown) {
    state_ = state::asking;
    // However the question ends (an answer, a failure, the run cancelled), the jobs
    // waiting for it go on.
    struct wake_waiting {
      slurm_licenses& list;
      ~wake_waiting() {
        list.state_ = state::known;
        for (auto* timer : list.waiting_) timer->cancel();
        list.waiting_.clear();
      }
    } wake{*this};
    const auto r = co_await slurm_client(show_licenses(), client_env_);
    if (r.succeeded())
      names_ = parse_license_names(r.out.text);
    else
      arun_log().warn("scontrol show licenses failed ({}): agent jobs take no provider license", client_failure(r));
  }
  co_return names_.contains(name);
}

}  // namespace arun::io
