#pragma once
// The end of a run: everything queued for the files (journal, events, logs) is written before
// arun prints the result and exits. A file that does not take its writes (an events FIFO whose
// reader stopped reading, a frozen disk) must not hold arun past a stop: SIGINT and SIGTERM
// are still heard while arun waits for it (docs/running.md, "Events").

#include "files/background_writer.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <functional>

namespace arun::cli {

/// Waits until `writer` has run every job queued, the run's `signals` (of `ctx`, whose run
/// has returned) watched meanwhile. A first SIGINT or SIGTERM (`stop_signal` 0) becomes the
/// run's stop signal and gives the writes 2 s more; a stop signal given before (during the
/// run) gives them 2 s from now. Past those 2 s arun abandons writes that wait for a reader
/// (abandon_waiting_writes) and returns once the queue is through; when it is still not
/// through a second later (a write stuck in the kernel), arun exits with 128 + the signal.
/// A second signal calls `emergency(sig)`, which does not return.
void drain_at_end(boost::asio::io_context& ctx, boost::asio::signal_set& signals, io::background_writer& writer,
                  int& stop_signal, const std::function<void(int)>& emergency);

}  // namespace arun::cli
