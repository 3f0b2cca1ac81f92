#pragma once
// The throttle of a fan-out handed to the slurm executor whole, shared between its parts:
// its job arrays (cut at the cluster's MaxArraySize) and the single jobs of late arrivals
// (a retry). The jobs of all its parts running at once never exceed the throttle:
// - a part is submitted once a unit is free, with as many units as are free then, which
//   becomes its array's task limit (`--array=0-N%LIMIT`);
// - a part never keeps more units than it has unfinished jobs: as its tail drains, the spare
//   units go to the parts behind it, raising their limits (`scontrol update
//   ArrayTaskThrottle`) or letting the next one be submitted.
// Pure bookkeeping, no I/O: the submitter acts on what share_out() says.

#include <cstddef>
#include <vector>

namespace arun::io {

class fan_out_budget {
public:
  explicit fan_out_budget(int throttle);

  /// A part of `jobs` jobs, waiting for units; returns its number (0, 1, ... in order).
  std::size_t add(std::size_t jobs);
  /// One job of `part` ended (or its submission failed): the part keeps at most as many
  /// units as it has jobs left.
  void finished(std::size_t part);

  struct grant {
    std::size_t part;
    int limit;   ///< the part's task limit from now on
    bool first;  ///< the part's first units: submit it now; else raise its limit
  };
  /// Gives the free units to the parts in order, each up to its unfinished jobs.
  std::vector<grant> share_out();

  int free_units() const noexcept { return free_; }
  /// The units `part` holds: the most of its jobs that may run at once.
  int held(std::size_t number) const { return parts_.at(number).held; }
  /// Whether every part's jobs have ended.
  bool drained() const noexcept;

private:
  struct part_units {
    std::size_t unfinished;
    int held = 0;
    bool granted = false;
  };
  std::vector<part_units> parts_;
  int free_;
  std::size_t first_undrained_ = 0;  ///< parts before it have no job left
};

}  // namespace arun::io
