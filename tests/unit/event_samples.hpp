#pragma once
// Builders for run events and a FILE* that captures what is written to it (progress and
// event sink tests). Plain assignments: g++ 12 warns falsely on designated initializers of
// aggregates holding strings.

#include <arun/events.hpp>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace arun::test {

inline event make_event(event_kind kind, std::string step = {}, std::string type = "bash") {
  event e;
  e.kind = kind;
  e.session_id = "20261121-134501-3f9a2c";
  e.recipe_name = "demo";
  e.step = std::move(step);
  if (!e.step.empty()) e.step_type = std::move(type);
  return e;
}

inline event step_start(std::string step, std::string type = "bash") {
  return make_event(event_kind::step_start, std::move(step), std::move(type));
}

inline event loop_start(std::string step, std::optional<std::size_t> items) {
  auto e = make_event(event_kind::step_start, std::move(step), "loop");
  e.items = items;
  return e;
}

/// step_end pointing at `r`, which must outlive the event.
inline event step_end(const step_result& r, std::string type = "bash") {
  auto e = make_event(event_kind::step_end, r.step_id, std::move(type));
  e.result = &r;
  return e;
}

inline step_result finished(std::string id, step_status status, std::string error = {}) {
  step_result r;
  r.step_id = std::move(id);
  r.status = status;
  r.attempts = 1;
  r.error = std::move(error);
  if (status == step_status::completed) r.exit_code = 0;
  return r;
}

/// A FILE* backed by memory (open_memstream).
class captured_file {
public:
  captured_file() : file_(::open_memstream(&buffer_, &size_)) {}
  ~captured_file() {
    std::fclose(file_);
    std::free(buffer_);
  }
  captured_file(const captured_file&) = delete;
  captured_file& operator=(const captured_file&) = delete;

  std::FILE* get() const { return file_; }
  std::string text() {
    std::fflush(file_);
    return std::string(buffer_, size_);
  }

private:
  char* buffer_ = nullptr;
  std::size_t size_ = 0;
  std::FILE* file_;
};

}  // namespace arun::test
