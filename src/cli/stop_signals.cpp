#include "stop_signals.hpp"

#include <csignal>
#include <pthread.h>

namespace arun::cli {
namespace {

sigset_t stop_signals() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void hold_stop_signals() noexcept {
  const auto set = stop_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void release_stop_signals() noexcept {
  const auto set = stop_signals();
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace arun::cli
