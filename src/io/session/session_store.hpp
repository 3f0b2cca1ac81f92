#pragma once
// A session on disk (docs/sessions.md, "Where sessions live"): ROOT/ID with `lock` (flock while a
// run is alive), `recipe.yaml` (the recipe's copy), `sources/` (copies of every recipe file the run
// read: sub-recipes, extends parents), `journal.jsonl` (one checksummed line per finished step
// instance, one write(2) each, fsync'd at least once a second and at pauses), `state.json`
// (a snapshot replaced atomically: temp, fsync, rename, fsync dir), `origin.json` (what never
// changes, to rebuild a damaged state.json) and `events.jsonl`.
//
// During a run the journal writes, its fsyncs and the periodic snapshots go through a
// background_writer (write_in_background), so that a stalled filesystem does not stall the
// event loop; the snapshots at the start and the end are written in place, after the queue.

#include "files/background_writer.hpp"
#include "files/directory_trust.hpp"
#include "output/secret_masker.hpp"
#include "recipe/recipe_loader.hpp"

#include <arun/run_services.hpp>

#include <boost/json/object.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::io {

/// The state format this arun writes and reads.
inline constexpr int session_format = 1;

/// Whether `id` can name a session directory (letters, digits, `-`, `_`; no path).
bool valid_session_id(std::string_view id);

/// Whether a running arun holds the session in `dir` (its `lock`, docs/sessions.md,
/// "Where sessions live"). Probes the lock, so a resume starting at that very instant may be
/// refused once.
bool session_is_live(const std::string& dir);

/// Where sessions live: `flag` (--session-dir), else $ARUN_SESSION_DIR, else
/// $XDG_STATE_HOME/arun/sessions, else ~/.local/state/arun/sessions; the user's own
/// subdirectory of it when it is a shared sticky directory such as /tmp (per_user_path).
/// Nothing is checked: commands that read or write sessions use checked_session_root.
std::string session_root(const std::string& flag);

/// session_root, checked like a directory shared with other users (trust_directory,
/// docs/sessions.md): its path, or the refusal to print; `make` makes it (0700) if missing.
trusted_directory checked_session_root(const std::string& flag, trust_mode mode);

/// Copies of recipe files kept in memory until the session directory exists, then written
/// to it (the recipe is read before a session is created).
class session_sources final : public recipe_sources {
public:
  std::optional<std::string> saved(const std::string& path) override;
  void read(const std::string& path, std::string_view text) override;
  /// The text read for `path`, if it was read.
  std::optional<std::string> copy_of(const std::string& path) const;
  /// From now on every copy (earlier ones included) goes to `dir`/sources.
  void attach(const std::string& dir);
  /// The recipe files whose text on disk is no longer the copy's (`PATH`, or `PATH
  /// (deleted)`), in path order: what a resume without --reload warns about.
  std::vector<std::string> changed_on_disk() const;
  /// Loads the copies of a session for a resume: `saved` answers from them.
  static std::variant<std::unique_ptr<session_sources>, std::string> load(const std::string& dir);

private:
  void write_manifest();
  static std::string key(const std::string& path);

  std::string dir_;                              ///< empty: not attached
  bool replay_ = false;                          ///< resume: answer from the copies
  std::map<std::string, std::string> files_;     ///< canonical path -> text
  std::map<std::string, std::string> names_;     ///< canonical path -> file name in sources/
};

class session_store final : public run_journal {
public:
  /// Creates ROOT/ID (parents too) and takes its lock. Errors name the path and the reason.
  static std::variant<std::unique_ptr<session_store>, std::string> create(const std::string& root,
                                                                          const std::string& id);
  /// Opens an existing session for resume: takes the lock (refused while another arun holds
  /// it), reads state.json (refused when missing, unreadable or of another format) and the
  /// journal (a torn last line is ignored and cut off). `retry_failed`: non-fatal failures run
  /// again too. An instance that runs again also re-opens the loops and calls containing it.
  static std::variant<std::unique_ptr<session_store>, std::string> open(const std::string& root,
                                                                        const std::string& id, bool retry_failed);
  /// Reads state.json without locking (sessions list/show); an error text when unusable: not
  /// a regular file (never blocks on a FIFO), larger than `max_bytes`, a symlink, or in a
  /// session directory that is a symlink or not the user's.
  static std::variant<boost::json::object, std::string> read_state(const std::string& dir,
                                                                  std::size_t max_bytes = std::size_t{1} << 30);

  ~session_store() override;
  session_store(const session_store&) = delete;
  session_store& operator=(const session_store&) = delete;

  const std::string& id() const noexcept { return id_; }
  const std::string& dir() const noexcept { return dir_; }
  boost::json::object& state() noexcept { return state_; }

  /// From now on every record, snapshot and stored output has the secrets of `masker` masked.
  void mask_with(const secret_masker* masker) noexcept { masker_ = masker; }
  /// `text` as the session may keep it: its secrets masked.
  std::string masked(std::string_view text) const { return masker_ ? masker_->mask(text) : std::string(text); }

  /// From now on journal records, fsyncs and save_state_soon run on `writer`'s thread.
  void write_in_background(std::shared_ptr<background_writer> writer) { writer_ = std::move(writer); }
  /// The writer of write_in_background, or null.
  background_writer* writer() const noexcept { return writer_.get(); }
  /// A write on the session's behalf failed (a stored output): as for a journal record, no
  /// record is written after it (the instance that needed it runs again on resume) and the
  /// failure handler stops the run.
  void report_failure(std::string why) noexcept;
  /// Waits until every write queued so far is done (or, with `limit`, at most that long:
  /// false if some are still queued).
  bool flush(std::optional<std::chrono::milliseconds> limit = std::nullopt);

  /// Writes state.json atomically (with `updated` and the record count), after every queued
  /// write; an error text or empty.
  std::string save_state();
  /// The same, queued behind the journal writes (written in place without a writer); an
  /// error goes to the failure handler.
  void save_state_soon();
  /// fsync of the journal (pauses, the end, once a second), queued behind the journal writes.
  void sync() noexcept;
  /// The first journal write error, empty if none.
  std::string journal_error() const;
  /// Called once, with the reason, when the store first fails to write (a journal record, a
  /// snapshot, an fsync): the run must stop, since what finishes next could not be kept. It may
  /// be called on the background writer's thread.
  void on_failure(std::function<void(const std::string&)> handler);
  /// The first write failure, empty if none.
  std::string failure() const;
  /// After a failure: frees the space the store keeps in reserve (`reserve`, 64 KiB, made when
  /// the run starts) and writes state.json, without the context and the step list when the
  /// whole snapshot does not fit. An error text or empty.
  std::string save_state_after_failure();
  /// Opened by `open` (a resume), not `create`.
  bool resumed() const noexcept { return resumed_; }
  /// Journal records written, of this run and the earlier ones.
  std::size_t records() const noexcept { return records_; }
  /// What a resume could not read, to tell before anything runs: damaged journal lines, records
  /// missing from the journal, a state.json rebuilt from origin.json and the journal.
  const std::vector<std::string>& notices() const noexcept { return notices_; }
  /// Records loaded from an earlier run of this session.
  std::size_t resumed_records() const noexcept { return loaded_.size(); }
  /// Recorded instances that run again on this resume: unfinished ones, failed ones (all
  /// of them with `retry_failed`).
  std::size_t instances_to_run_again() const noexcept { return runs_again_.size(); }
  /// Recorded instances that failed and stay failed (non-fatal, without `retry_failed`).
  std::size_t failures_kept() const;

  void record(const step_result& result, const boost::json::object& context_delta) noexcept override;
  const finished_instance* find(std::string_view instance_id) const noexcept override;
  /// A usage line in the journal (session_record.hpp), written as a record is; not counted
  /// in `records`.
  void record_usage(std::string_view instance_id, const agent_usage& call) noexcept override;
  std::optional<std::vector<agent_usage>> recorded_usage() const override;
  /// Whether the journal, as this run found it, has a record of the instance or of one that
  /// contains it (taken as finished, or a failure that runs again): a leaf the journal never
  /// records itself (a sub-recipe step's recovery agent) counts as recorded with its step.
  bool recorded(std::string_view instance_id) const noexcept;

private:
  session_store(std::string id, std::string dir, int lock_fd, int journal_fd)
      : id_(std::move(id)), dir_(std::move(dir)), lock_fd_(lock_fd), journal_fd_(journal_fd) {}
  void load_journal(bool retry_failed);
  void append_record(const std::string& line, bool counted = true) noexcept;  ///< on the writer's thread, if any
  void queue_line(std::string line, bool counted);  ///< append_record, on the writer if any
  void sync_now() noexcept;                               ///< likewise
  void set_journal_error(std::string why) noexcept;
  bool journal_failed() const;
  void fail(std::string why) noexcept;
  void report_damage(const std::string& path, const std::vector<std::size_t>& damaged);
  void make_reserve() noexcept;
  std::string state_text() const;  ///< state.json's text, secrets masked
  void drop_reserve() noexcept;

  std::string id_, dir_;
  int lock_fd_ = -1, journal_fd_ = -1;
  boost::json::object state_;
  std::map<std::string, finished_instance, std::less<>> loaded_;
  std::set<std::string, std::less<>> runs_again_;  ///< recorded, but not finished: they run again
  /// The usage lines of the earlier runs, summed per provider and model; none: no line.
  std::optional<std::vector<agent_usage>> earlier_usage_;
  std::atomic<std::size_t> records_{0};  // written
  std::size_t queued_records_ = 0;       // handed to the writer (or written)
  std::chrono::steady_clock::time_point last_sync_ = std::chrono::steady_clock::now();
  bool dirty_ = false;  // the writer's thread only, when there is one
  bool resumed_ = false;
  mutable std::mutex errors_mutex_;  // the three below: set on the writer's thread
  std::string journal_error_;
  std::string failure_;
  std::function<void(const std::string&)> on_failure_;
  std::vector<std::string> notices_;
  bool origin_written_ = false;
  std::size_t origin_masked_forms_ = 0;  // the masker's forms when origin.json was written
  std::shared_ptr<background_writer> writer_;
  const secret_masker* masker_ = nullptr;
};

/// Writes `text` to `path` atomically: a temp file next to it, fsync, rename, fsync of the
/// directory; the file is the owner's only (0600). An error text or empty.
std::string write_file_atomically(const std::string& path, std::string_view text);

}  // namespace arun::io
