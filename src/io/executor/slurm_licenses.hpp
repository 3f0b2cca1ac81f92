#pragma once
// The licenses a Slurm cluster defines (`Licenses=claude:20` in slurm.conf): an agent job
// takes one of its provider's, so the cluster caps each provider's agents across every run
// that uses it. Asked once per run (`scontrol show licenses`), when the first agent job needs
// to know; jobs starting meanwhile wait for that one answer.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

class slurm_licenses {
public:
  explicit slurm_licenses(std::vector<std::string> client_env) : client_env_(std::move(client_env)) {}

  /// Whether the cluster defines license `name`; false when scontrol cannot tell (logged once).
  boost::asio::awaitable<bool> defines(std::string name);

private:
  enum class state { unknown, asking, known };
  std::vector<std::string> client_env_;
  state state_ = state::unknown;
  std::set<std::string, std::less<>> names_;
  std::vector<boost::asio::steady_timer*> waiting_;  ///< cancelled when the answer is in
};

/// The license names in `scontrol show licenses` output ("LicenseName=claude Total=2 ...").
std::set<std::string, std::less<>> parse_license_names(std::string_view scontrol_output);

}  // namespace arun::io
