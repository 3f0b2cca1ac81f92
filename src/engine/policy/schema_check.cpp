#include "policy/schema_check.hpp"

#include "policy/json_extract.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>

namespace arun::engine {
namespace {

// Enough problems to fix a reply, few enough not to drown the prompt or the error.
constexpr std::size_t most_problems_shown = 20;
constexpr std::size_t most_reply_bytes_quoted = 4096;

// A line per problem from `first` on, the first most_problems_shown of them.
void list_problems(std::string& text, const std::vector<std::string>& problems, std::size_t first = 0) {
  const auto last = std::min(problems.size(), first + most_problems_shown);
  for (std::size_t i = first; i < last; ++i) text.append("\n- ").append(problems[i]);
  if (problems.size() > last) text.append("\n- … and ").append(std::to_string(problems.size() - last)).append(" more");
}

}  // namespace

schema_verdict check_output(const json_schema_check& schema, std::string_view output) {
  schema_verdict v;
  v.value = extract_json(output);
  if (!v.value) {
    v.problems.push_back("the output holds no JSON value");
    return v;
  }
  v.problems = schema.violations(*v.value);
  return v;
}

std::string schema_correction(const json_schema_check& schema, const std::vector<std::string>& problems,
                              std::string_view reply) {
  std::string text = "\n\n## Your previous reply was not accepted\n\nIt had to be JSON conforming to the schema "
                     "below, and a validator found:";
  list_problems(text, problems);
  text.append("\n\nYour previous reply");
  if (reply.size() > most_reply_bytes_quoted) {
    text.append(" (its first ").append(std::to_string(most_reply_bytes_quoted)).append(" bytes)");
    reply = reply.substr(0, most_reply_bytes_quoted);
  }
  text.append(":\n\n```\n").append(reply).append("\n```\n\nThe JSON Schema:\n\n```json\n");
  text.append(boost::json::serialize(schema.document()));
  text.append("\n```\n\nReply again with only a JSON value that conforms to the schema: no prose, no code fence.");
  return text;
}

std::string schema_failure(const json_schema_check& schema, const std::vector<std::string>& problems, int calls) {
  std::string text = "output_schema (" + schema.origin() + "): ";
  text += calls > 1 ? "the last of " + std::to_string(calls) + " replies does not conform" : "the output does not conform";
  if (problems.empty()) return text;
  // The first problem on the first line: the one line a summary or `error:` shows.
  text += ": " + problems.front();
  if (problems.size() > 1) {
    text += " (and " + std::to_string(problems.size() - 1) + " more)";
    list_problems(text, problems, 1);
  }
  return text;
}

}  // namespace arun::engine
