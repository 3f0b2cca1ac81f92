#pragma once
// The throttle of a fan-out handed to the slurm executor whole, shared between its parts:
// its job arrays (cut at the cluster's MaxArraySize) and the single jobs of late arrivals
// (a retry). The jobs of all its parts running at once never exceed the throttle:
// - a part is submitted once a unit is free, with as many units as are free then, which
//   becomes its array's task limit (`--array=0-N%LIMIT`);
// - a part never keeps more units than it has unfinished jobs: as its tail drains, the spare
//   units go to the parts behind it, raising their limits (`scontrol update
//   ArrayTaskThrottle`) or letting the next one be submitted.
// - after a crash, the arrays the earlier arun submitted and this one takes up are parts too
//   (add_adopted), served first: their running tasks keep their units, and their task limits
//   are lowered (or raised) to what they hold, so that their tasks and the new parts' never
//   run more than the throttle at once, from the first poll (docs/scale-out.md, resume).
// Pure bookkeeping, no I/O: the submitter acts on what share_out() says.

#include <cstddef>
#include <vector>

namespace arun::io {

class fan_out_budget {
public:
  explicit fan_out_budget(int throttle);

  /// A part of `jobs` jobs, waiting for units; returns its number (0, 1, ... in order).
  std::size_t add(std::size_t jobs);
  /// A part already in the queue (an earlier arun's array, taken up): `jobs` jobs, `running`
  /// of them running. Its running jobs hold units at once, even past the throttle (a resume
  /// with a lower limit); such units over the throttle are its excess, and its task limit
  /// (limit()) leaves them out, so that no task of it starts until they have ended. A part with
  /// jobs but no running one holds one unit at least: Slurm has no task limit of 0. Served
  /// before other parts by share_out. Returns its number.
  std::size_t add_adopted(std::size_t jobs, std::size_t running);
  /// One job of `part` ended (or its submission failed): the part keeps at most as many
  /// units as it has jobs left.
  void finished(std::size_t part);
  /// The part's task limit could not be set: it may run every job it has left, and holds as
  /// many units (free units may go below zero until they end).
  void uncontrolled(std::size_t part);

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
  /// The task limit `part` is to have: its units less its excess (see add_adopted).
  int limit(std::size_t number) const { return parts_.at(number).held - parts_.at(number).excess; }
  /// Whether every part's jobs have ended.
  bool drained() const noexcept;

private:
  struct part_units {
    std::size_t unfinished;
    int held = 0;
    bool granted = false;
    bool adopted = false;
    int excess = 0;  ///< of `held`: running jobs past the throttle, their units given back as they end
  };
  void grant_to(std::size_t i, std::vector<grant>& grants);
  std::vector<part_units> parts_;
  int free_;
  std::size_t first_undrained_ = 0;  ///< parts before it have no job left
};

}  // namespace arun::io
