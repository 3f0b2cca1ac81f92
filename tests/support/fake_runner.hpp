#pragma once
// A step runner without processes for engine tests. The command is a tiny script:
//   "sleep:MS rest"  waits MS milliseconds (a cancellable timer), then runs "rest" if any
//   "fail:CODE"      exits with CODE
//   "timeout"        reports a timed-out child
//   "dies-on-stop:MS" waits MS milliseconds; stopped, it reports a child killed by SIGINT
//                    that the runner did not see stopped (the race a Ctrl-C can win)
//   "out:TEXT"       prints TEXT (after `${RECIPE_VAR_x}` expansions are substituted)
//   "queued:MS rest" waits MS milliseconds as in a cluster's queue, says it runs (on_running),
//                    then runs "rest"; the outcome says it was queued MS milliseconds
//   anything else    prints the command itself
// It counts children in flight, so tests can check the concurrency limit. Agent steps play
// the first line of their prompt the same way; `rate_limited_left[line]` makes that many
// calls fail with a 429 message, `no_json_left[line]` that many reply with prose,
// `wrong_json_left[line]` that many reply `{"unexpected": true}`.

#include <arun/step_runner.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace arun::test {

class fake_runner final : public step_runner {
public:
  std::vector<bash_invocation> calls;
  std::vector<std::string> started;  ///< instance ids, in start order
  std::vector<std::string> finished; ///< instance ids, in finish order
  std::map<std::string, int> failures_left;  ///< command -> how many more times it fails (exit 1)
  int in_flight = 0;
  int peak = 0;
  std::vector<agent_invocation> agent_calls;
  std::map<std::string, int> rate_limited_left;
  std::map<std::string, int> no_json_left;
  std::map<std::string, int> wrong_json_left;
  /// Set: every agent call reports this usage (as claude's JSON output does).
  std::optional<agent_usage> usage_per_call;
  int agents_in_flight = 0;
  int agent_peak = 0;
  /// Whether it takes whole fan-outs (a cluster's job arrays) for leaves not kept local.
  bool fan_outs = false;
  bool takes_fan_outs(const leaf_placement& p) const override { return fan_outs && !p.local_only; }

  static std::string expand(std::string text, const bash_invocation& inv) {
    for (const auto& v : inv.exports)
      for (const std::string& form : {"\"${" + v.name + "}\"", "${" + v.name + "}"}) {
        for (auto at = text.find(form); at != std::string::npos; at = text.find(form, at + v.value.size()))
          text.replace(at, form.size(), v.value);
      }
    return text;
  }

  boost::asio::awaitable<leaf_outcome> run_bash(bash_invocation inv) override {
    calls.push_back(inv);
    started.push_back(inv.instance_id);
    ++in_flight;
    peak = std::max(peak, in_flight);
    auto out = co_await play(expand(inv.command, inv), inv);
    --in_flight;
    finished.push_back(inv.instance_id);
    co_return out;
  }

  boost::asio::awaitable<leaf_outcome> run_agent(agent_invocation inv) override {
    agent_calls.push_back(inv);
    started.push_back(inv.instance_id);
    ++in_flight;
    ++agents_in_flight;
    peak = std::max(peak, in_flight);
    agent_peak = std::max(agent_peak, agents_in_flight);
    const auto line = inv.prompt.substr(0, inv.prompt.find('\n'));
    bash_invocation as_bash;
    as_bash.instance_id = inv.instance_id;
    as_bash.on_line = inv.on_line;
    auto out = co_await play(line, as_bash);
    if (auto it = rate_limited_left.find(line); out.succeeded() && it != rate_limited_left.end() && it->second > 0) {
      --it->second;
      out.exit_code = 1;
      out.error = "exit code 1";
      out.snippet = "Error: 429 Too Many Requests";
      out.stdout_text.clear();
    } else if (auto nj = no_json_left.find(line); out.succeeded() && nj != no_json_left.end() && nj->second > 0) {
      --nj->second;
      out.stdout_text = "Sorry, no JSON today.";
    } else if (auto wj = wrong_json_left.find(line); out.succeeded() && wj != wrong_json_left.end() && wj->second > 0) {
      --wj->second;
      out.stdout_text = R"({"unexpected": true})";
    }
    if (usage_per_call && out.started) out.usage = usage_per_call;
    --agents_in_flight;
    --in_flight;
    finished.push_back(inv.instance_id);
    co_return out;
  }

private:
  boost::asio::awaitable<leaf_outcome> play(std::string script, const bash_invocation& inv) {
    leaf_outcome o;
    o.started = true;
    auto ex = co_await boost::asio::this_coro::executor;
    // A stopped child reports itself cancelled, as the real runner's does, instead of the
    // next co_await throwing (a DAG's fail-fast stops a running branch this way).
    co_await boost::asio::this_coro::throw_if_cancelled(false);
    // Always suspend once, as a real child does.
    co_await boost::asio::post(ex, boost::asio::use_awaitable);
    if (script.rfind("queued:", 0) == 0) {
      const auto space = script.find(' ');
      boost::asio::steady_timer t(ex, std::chrono::milliseconds(std::stoi(script.substr(7, space - 7))));
      co_await t.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (inv.on_running) inv.on_running();
      o.queued = std::chrono::milliseconds(std::stoi(script.substr(7, space - 7)));
      script = script.substr(space + 1);
    }
    if (script.rfind("dies-on-stop:", 0) == 0) {
      boost::asio::steady_timer t(ex, std::chrono::milliseconds(std::stoi(script.substr(13))));
      auto [ec] = co_await t.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (ec) {
        o.signal = 2;
        o.error = "killed by SIGINT";
        co_return o;
      }
      script = "done";
    }
    if (script.rfind("sleep:", 0) == 0) {
      const auto space = script.find(' ');
      const int ms = std::stoi(script.substr(6, space == std::string::npos ? std::string::npos : space - 6));
      boost::asio::steady_timer t(ex, std::chrono::milliseconds(ms));
      auto [ec] = co_await t.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (ec) {
        o.cancelled = true;
        o.signal = 15;
        o.error = "cancelled";
        co_return o;
      }
      script = space == std::string::npos ? std::string("done") : script.substr(space + 1);
    }
    if (auto it = failures_left.find(script); it != failures_left.end() && it->second > 0) {
      --it->second;
      o.exit_code = 1;
      o.error = "exit code 1";
      co_return o;
    }
    if (script.rfind("fail:", 0) == 0) {
      o.exit_code = std::stoi(script.substr(5));
      o.error = "exit code " + script.substr(5);
      o.snippet = "boom";
      co_return o;
    }
    if (script == "timeout") {
      o.timed_out = true;
      o.signal = 15;
      o.error = "timed out";
      co_return o;
    }
    o.exit_code = 0;
    o.stdout_text = script.rfind("out:", 0) == 0 ? script.substr(4) : script;
    if (inv.on_line) inv.on_line(output_stream::out, o.stdout_text, false);
    co_return o;
  }
};

}  // namespace arun::test
