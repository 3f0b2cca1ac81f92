#pragma once
// A session's stored outputs (run_services.hpp, output_store): a finished instance's output
// longer than the threshold goes to SESSION/outputs/<n>-<instance>.txt, written and fsync'd on
// the session's background writer (queued before the instance's journal record, so a record
// never refers to a file that is not written yet), and is read back when a template or a
// condition uses it — also by a resumed run. Read by name from outputs/ only, at its recorded
// size (stored_file.hpp).

#include "session/session_store.hpp"

#include <arun/run_services.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

namespace arun::io {

class session_outputs final : public output_store {
public:
  /// `threshold` 0: nothing is stored.
  session_outputs(session_store& store, std::size_t threshold);
  /// Waits for the writes still queued: they refer to this object.
  ~session_outputs() override;
  session_outputs(const session_outputs&) = delete;
  session_outputs& operator=(const session_outputs&) = delete;

  std::size_t spill_threshold() const noexcept override { return threshold_; }
  std::optional<std::string> store(std::string_view instance, std::string text) override;
  std::optional<std::string> load(std::string_view file, std::uint64_t bytes, std::string& why) override;

private:
  void write(const std::string& name, const std::string& path, const std::string& text) noexcept;

  session_store& store_;
  std::size_t threshold_;
  std::string dir_;
  bool dir_made_ = false;  // by write(), on the writer's thread
  std::size_t next_ = 0;
  std::mutex mutex_;              // the writer thread updates queued_
  std::set<std::string> queued_;  // names stored but not yet written
};

}  // namespace arun::io
