#include "output/status_pause.hpp"

#include <atomic>

namespace arun::io {
namespace {

// The terminal is one per process, and so is its status line. Questions are asked on the
// event loop's thread (approvals) or before it runs (secrets): atomic only to be safe.
std::atomic<redrawn_status*> registered{nullptr};

}  // namespace

status_registration::status_registration(redrawn_status* status) noexcept : before_(registered.exchange(status)) {}

status_registration::~status_registration() { registered.store(before_); }

status_paused::status_paused() noexcept : paused_(registered.load()) {
  if (paused_) paused_->pause();
}

status_paused::~status_paused() {
  if (paused_) paused_->resume();
}

}  // namespace arun::io
