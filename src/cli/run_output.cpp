#include "run_output.hpp"

#include "files/json_text.hpp"
#include "output/plan_format.hpp"
#include "output/result_format.hpp"
#include "output/secret_masker.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace arun::cli {

bool write_stdout(std::string_view text) {
  errno = 0;
  const bool written = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  if (std::fflush(stdout) == 0 && written && !std::ferror(stdout)) return true;
  const int error = errno;
  // A reader that stopped reading (`arun … | head -1`) chose to: like ripgrep, not an error.
  if (error == EPIPE) return true;
  std::fprintf(stderr, "arun: cannot write to stdout: %s\n", error ? std::strerror(error) : "write error");
  return false;
}

bool write_json_stdout(const boost::json::value& document) {
  return write_stdout(io::to_json_text(document) + "\n");
}

bool print_result(const run_result& result, const std::string& format, const io::secret_masker* masker,
                  const io::log_locator& logs) {
  if (format == "json") return io::write_result_json(result, logs, masker, write_stdout);
  if (masker && !masker->empty()) {
    // The output is masked before the text shortens it: a cut through a secret would leave
    // its beginning (docs/watching.md#secrets).
    run_result masked = result;
    masker->mask_json(masked.output);
    return write_stdout(masker->mask(io::result_to_text(masked, logs)));
  }
  return write_stdout(io::result_to_text(result, logs));
}

bool print_plan(const std::vector<planned_step>& plan, const recipe& r, const std::string& format,
                const io::secret_masker* masker) {
  if (format == "json") {
    boost::json::value document = io::plan_to_json(r, plan);
    if (masker) masker->mask_json(document);
    return write_json_stdout(document);
  }
  return write_stdout(masker ? masker->mask(io::plan_to_text(r, plan)) : io::plan_to_text(r, plan));
}

}  // namespace arun::cli
