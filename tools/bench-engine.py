#!/usr/bin/env python3
"""Engine benchmark (docs/performance.md): arun against peers run in the same invocation.

Generates the workloads in a temporary directory, then runs every contender of every
workload once per round, rotating the order each round, and reports the median and the
minimum of each and the ratio of the medians. The machines are shared and noisy (figures
drift up to 3x between minutes), so absolute seconds mean little: compare contenders run
seconds apart, as here, never figures from different invocations.

  tools/bench-engine.py --arun build/release/src/cli/arun --rounds 9 --json figures.json

Besides xargs, ninja and a bash loop there are two more peers. The floor is a small C
program compiled here with cc: N x `/bin/bash -c true`, at most P at once, with posix_spawn
and waitpid and nothing else, which is what any runner of N shell steps must pay. The Rust
recipe runner (the older amplihack-recipe-runner, `--rust-runner PATH`) runs the same
recipes where it can. Every contender is started by the meter, another small C program that
reports the wall time, CPU time and peak RSS of what it ran: a child started from Python
would inherit Python's peak RSS as the floor of its own.

Exit status: 0 when every run succeeded (MISS rows included: this is a report, not a
test), 1 when a run failed (its figures would be worthless), 2 on a usage error.
"""

import argparse
import datetime
import itertools
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MIB = 1024 * 1024

# arun's default --max-recipe-bytes; a larger recipe is given BIG_RECIPE_LIMIT.
ARUN_RECIPE_LIMIT = MIB
BIG_RECIPE_LIMIT = 100_000_000
# arun's default foreach max_iterations and recursion.max_total_steps.
ARUN_STEP_LIMIT = 10_000
# The Rust runner refuses a recipe over 1,000,000 bytes (MAX_YAML_SIZE_BYTES in its
# src/parser.rs) and stops after recursion.max_total_steps steps, 200 by default.
RUST_RECIPE_LIMIT = 1_000_000
RUST_STEP_LIMIT = 200

# The workloads by letter (the --only help lists them) and those run only when named.
WORKLOADS = {
    "a": "foreach 1000 x true, -j8",
    "b": "200 sequential true",
    "c": "parallel group 200 x sleep 0.05, -j50",
    "d": "foreach 10000, -j64: peak RSS",
    "e": "(a) with an extra context key of 0, 1 KiB, 1 MiB and a 100,000-element list",
    "f": "parallel group 20000 x true, -j8: peak RSS",
    "g": "foreach 100000 x true, -j8: peak RSS (minutes a round; only when named)",
    "h": "arun validate of 5000 and 20000 steps: wall and peak RSS",
    "i": "foreach 10000 x true, -j8 against xargs and the floor",
    "j": "200 agent steps (a tiny shell-script agent), -j16, against xargs -P16 running it",
    "k": "a cached foreach of 1000 x sleep 0.05, -j8: the second run against the first",
}
OPT_IN = "g"

FLOOR_C = r"""/* The floor of the engine benchmark (tools/bench-engine.py): N x /bin/bash -c true,
   at most P at once, posix_spawn + waitpid and nothing else. What any runner of N shell
   steps must pay. Prints N when every child exited 0. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv) {
  if (argc != 3 || atol(argv[1]) < 0 || atol(argv[2]) < 1) {
    fprintf(stderr, "usage: floor N P\n");
    return 2;
  }
  long n = atol(argv[1]), p = atol(argv[2]), started = 0, running = 0, failed = 0;
  char *child[] = {"/bin/bash", "-c", "true", NULL};
  while (started < n || running > 0) {
    if (started < n && running < p) {
      pid_t pid;
      int error = posix_spawn(&pid, child[0], NULL, NULL, child, environ);
      if (error != 0) {
        fprintf(stderr, "floor: posix_spawn: %s\n", strerror(error));
        return 1;
      }
      ++started;
      ++running;
      continue;
    }
    int status;
    if (waitpid(-1, &status, 0) < 0) {
      perror("floor: waitpid");
      return 1;
    }
    --running;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (failed > 0) {
    fprintf(stderr, "floor: %ld children failed\n", failed);
    return 1;
  }
  printf("%ld\n", n);
  return 0;
}
"""


METER_C = r"""/* The meter of the engine benchmark (tools/bench-engine.py): runs argv[2..] with
   posix_spawn, waits for it with wait4 and writes "EXIT WALL_S USER_S SYS_S MAXRSS_KIB" to
   the file argv[1], then exits with the child's exit code. A child's ru_maxrss is never
   below the RSS of the process it was spawned from (at exec the kernel records the
   high-water mark of the memory left behind), so contenders are started from this small
   process rather than from Python. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double seconds(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: meter STATS_FILE COMMAND [ARG...]\n");
    return 2;
  }
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  pid_t pid;
  int error = posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ);
  if (error != 0) {
    fprintf(stderr, "meter: %s: %s\n", argv[2], strerror(error));
    return 127;
  }
  int status;
  struct rusage usage;
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      perror("meter: wait4");
      return 127;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  FILE *stats = fopen(argv[1], "w");
  if (stats == NULL) {
    perror("meter: stats file");
    return 127;
  }
  fprintf(stats, "%d %.6f %.6f %.6f %ld\n", code,
          (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9,
          seconds(usage.ru_utime), seconds(usage.ru_stime), usage.ru_maxrss);
  if (fclose(stats) != 0) {
    perror("meter: stats file");
    return 127;
  }
  return code;
}
"""


class RunFailed(Exception):
    pass


class Run:
    """One finished child: wall seconds, CPU seconds of its whole tree, peak RSS (bytes:
    the largest of the child and its reaped descendants), and rss_floor, a value no peak
    RSS can be under (the RSS of the process that started it, when that was this one)."""

    def __init__(self, wall, exit_code, cpu, maxrss, rss_floor, stdout_path, stderr_path):
        self.wall = wall
        self.exit_code = exit_code
        self.cpu = cpu
        self.maxrss = maxrss
        self.rss_floor = rss_floor
        self.stdout_path = stdout_path
        self.stderr_path = stderr_path

    def stdout(self):
        with open(self.stdout_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stderr_tail(self, limit=2000):
        with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-limit:]


def own_rss():
    """This process's current RSS in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def reset_own_peak_rss():
    """Without the meter a child's ru_maxrss is never below this process's peak RSS (the
    kernel records it at the child's exec). Resetting our peak to our current RSS before
    each spawn keeps our earlier peaks (generating a recipe, parsing a large JSON result)
    out of the figures; our current RSS stays under every figure (rss_floor)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def read_meter(stats_path):
    """The meter's figures: (exit code, wall s, CPU s, peak RSS bytes), or None when it
    wrote none (it could not start the command)."""
    try:
        with open(stats_path, encoding="ascii") as f:
            code, wall, user, system, maxrss_kib = f.read().split()
    except (OSError, ValueError):
        return None
    return int(code), float(wall), float(user) + float(system), int(maxrss_kib) * 1024


def spawn(argv, env, stdin_path, out_dir, meter=None):
    """Runs argv to completion and returns a Run; stdout and stderr go to files under
    out_dir. Every contender is started the same way: with posix_spawn + wait4 by the meter
    (whose figures are taken), or without one from here."""
    stdout_path = os.path.join(out_dir, "stdout")
    stderr_path = os.path.join(out_dir, "stderr")
    stats_path = os.path.join(out_dir, "stats")
    if meter:
        if os.path.exists(stats_path):
            os.unlink(stats_path)
        argv = [meter, stats_path, *argv]
        rss_floor = 0
    else:
        reset_own_peak_rss()
        rss_floor = own_rss()
    fds = [
        os.open(stdin_path or os.devnull, os.O_RDONLY),
        os.open(stdout_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
    ]
    actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)]
    start = time.perf_counter()
    try:
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    finally:
        for fd in fds:
            os.close(fd)
    _, status, rusage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    metered = read_meter(stats_path) if meter else None
    if metered:
        exit_code, wall, cpu, maxrss = metered
    else:
        exit_code = os.waitstatus_to_exitcode(status)
        cpu = rusage.ru_utime + rusage.ru_stime
        maxrss = rusage.ru_maxrss * 1024
    return Run(wall, exit_code, cpu, maxrss, rss_floor, stdout_path, stderr_path)


# --- checks: a benchmark that measures a failing run is worthless ---------------------


def check_exit(run):
    if run.exit_code != 0:
        return f"exit status {run.exit_code}"
    return None


def check_arun(expect_steps=None, expect_iterations=None):
    """Exit 0, JSON success, every top-level step completed, and for a foreach the
    iteration count."""

    def check(run):
        try:
            result = json.loads(run.stdout())
        except ValueError as e:
            return check_exit(run) or f"stdout is not JSON ({e})"
        steps = result.get("step_results", [])
        if run.exit_code != 0 or result.get("success") is not True:
            why = result.get("error") or next((s.get("error") for s in steps if s.get("error")), "")
            return f"exit status {run.exit_code}, success {result.get('success')!r}: {why}"
        if expect_steps is not None and len(steps) != expect_steps:
            return f"{len(steps)} step results, expected {expect_steps}"
        bad = [s["step_id"] for s in steps if s.get("status") != "completed"]
        if bad:
            return f"steps not completed: {', '.join(bad[:5])}"
        if expect_iterations is not None:
            done = steps[0].get("iterations", {}).get("completed")
            if done != expect_iterations:
                return f"iterations.completed is {done}, expected {expect_iterations}"
        return None

    return check


def check_rust(run):
    """The Rust runner exits 0 on success (1: a step failed, 2: the recipe did not parse).
    Its JSON result, when stdout is one, must not say `success: false` nor hold a failed
    step. Deliberately tolerant beyond that: it could not be tried where this was written."""
    error = check_exit(run)
    if error:
        return error
    try:
        result = json.loads(run.stdout())
    except ValueError:
        return None  # --validate-only prints text
    if not isinstance(result, dict):
        return None
    if result.get("success") is False:
        return "success false"
    failed = [s.get("step_id") for s in result.get("step_results", [])
              if isinstance(s, dict) and s.get("status") == "failed"]
    if failed:
        return f"steps failed: {', '.join(map(str, failed[:5]))}"
    return None


def check_ninja(edges):
    def check(run):
        error = check_exit(run)
        if error:
            return error
        if f"[{edges}/{edges}]" not in run.stdout():
            return f"ninja did not report [{edges}/{edges}]"
        return None

    return check


def check_floor(count):
    def check(run):
        error = check_exit(run)
        if error:
            return error
        if run.stdout().strip() != str(count):
            return f"the floor printed {run.stdout().strip()!r}, expected {count}"
        return None

    return check


# --- recipes ---------------------------------------------------------------------------


def write(path, chunks):
    """Writes a string, or the strings of an iterable one by one: the recipes are generated
    piece by piece so that no large one is ever held whole (see reset_own_peak_rss)."""
    with open(path, "w", encoding="utf-8") as f:
        if isinstance(chunks, str):
            f.write(chunks)
        else:
            f.writelines(chunks)
    return path


def yaml_list(count):
    """The flow list [0, 1, ..., count - 1], piece by piece."""
    yield "["
    for i in range(count):
        yield f"{i}, " if i < count - 1 else str(i)
    yield "]"


def foreach_recipe(name, count, extra_context=()):
    """A foreach of `count` parallel iterations of `true` over the context list `items`,
    after the pieces of extra_context (further context keys). Up to 10,000 items it runs
    with arun's default limits, as (a) and (d) always have: loop containers do not count,
    their iterations do. A longer loop raises max_iterations and recursion.max_total_steps
    to the item count."""
    big = count > ARUN_STEP_LIMIT
    yield f"name: {name}\n"
    if big:
        yield f"recursion: {{max_total_steps: {count}}}\n"
    yield "context:\n  items: "
    yield from yaml_list(count)
    yield "\n"
    yield from extra_context
    yield ("steps:\n"
           "  - id: each\n    command: 'true'\n    foreach: '{{items}}'\n    parallel: true\n")
    if big:
        yield f"    max_iterations: {count}\n"


def inline_foreach_recipe(name, count):
    """foreach_recipe with the list written in the step instead of the context: no context
    key to export to every iteration (docs/reference/templates.md, "The context in the environment":
    every key is exported, a 10,000-item list is 50 KB in each child's environment)."""
    yield f"name: {name}\nsteps:\n  - id: each\n    command: 'true'\n    parallel: true\n    foreach: "
    yield from yaml_list(count)
    yield "\n"


def sequential_recipe(name, count):
    yield f"name: {name}\nsteps:\n"
    for i in range(count):
        yield f"  - id: s{i}\n    command: 'true'\n"


def group_recipe(name, count, command):
    """One parallel_group of `count` steps running `command`. One flow mapping a line and
    no blank after its commas: 20,000 steps stay under the Rust runner's 1,000,000 bytes
    (and arun's default 1 MiB). Above the Rust runner's default of 200 steps, the step
    limit is raised to the step count (arun's default is 10,000)."""
    yield f"name: {name}\n"
    if count > RUST_STEP_LIMIT:
        yield f"recursion: {{max_total_steps: {count}}}\n"
    yield "steps:\n"
    for i in range(count):
        yield f"- {{id: p{i},command: '{command}',parallel_group: g}}\n"


# (j) The agent: reads its prompt file as a real CLI reads its prompt, replies one line.
AGENT_SH = """#!/bin/sh
cat "$1" >/dev/null
echo "ok"
"""


def agent_recipe(name, count):
    """A foreach of `count` parallel agent steps, no persona: the agent path's own cost."""
    yield f"name: {name}\nsteps:\n  - id: ask\n    agent: ''\n    prompt: 'item {{{{item}}}}'\n"
    yield "    parallel: true\n    foreach: "
    yield from yaml_list(count)
    yield "\n"


def cached_recipe(name, count):
    """A foreach of `count` parallel items with `cache: true`, each a 50 ms unit of work (far
    less than any agent call): what a second run of the same fan-out saves."""
    yield f"name: {name}\nsteps:\n  - id: each\n    command: 'sleep 0.05; echo {{{{item}}}}'\n"
    yield "    cache: true\n    parallel: true\n    foreach: "
    yield from yaml_list(count)
    yield "\n"


def generated_recipe(name, steps):
    """The realistic mix of generated_recipe() in tools/src/bench/bench_language.cpp: bash
    steps with templates, conditions and retries, agent steps (agent team:reviewer) and
    foreach steps, in turn."""
    yield (f"name: {name}\ncontext:\n  repo: /src/app\n  files: [a.py, b.py, c.py]\n"
           "  mode: fast\nsteps:\n")
    for i in range(steps):
        yield f"  - id: step-{i}\n"
        kind = i % 4
        if kind == 0:
            yield ("    command: |\n      cd {{repo}} && make test MODE={{mode}}\n"
                   f"    output: out_{i}\n    timeout: 60\n")
        elif kind == 1:
            yield ("    condition: \"{{mode}} == 'fast' and len(files) > 2\"\n"
                   f"    command: echo step-{i}\n"
                   "    retry: {max_attempts: 3, backoff: exponential, on: [failure, 2]}\n")
        elif kind == 2:
            yield ("    agent: \"team:reviewer\"\n"
                   "    prompt: \"Review {{repo}} in {{mode}} mode\"\n"
                   f"    output: review_{i}\n")
        else:
            yield ("    foreach: \"{{files}}\"\n    as: f\n    parallel: 4\n"
                   "    command: lint {{f}}\n")


# The extra context key of (e): its name in the contender's name, and a function giving the
# pieces of its YAML value (None: no extra key).
CONTEXT_SWEEP = [
    ("0", None),
    ("1KiB", lambda: ["x" * 1024]),
    ("1MiB", lambda: ["x" * MIB]),
    ("100k list", lambda: yaml_list(100_000)),
]


def recipe_limit(recipe):
    """arun's --max-recipe-bytes for a recipe over its default limit, else nothing."""
    if os.path.getsize(recipe) > ARUN_RECIPE_LIMIT:
        return ["--max-recipe-bytes", str(BIG_RECIPE_LIMIT)]
    return []


def compile_c(work, name, source, without):
    """Compiles source into work/name with cc -O2; None, with a message saying what goes
    `without` it, when there is no C compiler or it fails."""
    cc = shutil.which("cc")
    if not cc:
        print(f"bench-engine: no C compiler (cc): {without}", file=sys.stderr)
        return None
    source_path = write(os.path.join(work, name + ".c"), source)
    binary = os.path.join(work, name)
    done = subprocess.run([cc, "-O2", "-o", binary, source_path], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        print(f"bench-engine: cc failed on the {name}: {without}\n{done.stderr}",
              file=sys.stderr)
        return None
    return binary


# --- workloads -------------------------------------------------------------------------


class Contender:
    """One command measured in every round. `arun` marks a run of arun itself (the primary
    contender or a variant of it), as opposed to a peer. `env` adds to the environment."""

    def __init__(self, name, argv, check, stdin=None, before=None, arun=False, env=None):
        self.name = name
        self.argv = argv
        self.check = check
        self.stdin = stdin
        self.before = before  # run untimed before each measurement
        self.arun = arun
        self.env = env or {}


class Workload:
    """contenders[0] is the primary arun run; further arun runs are variants of it, each
    reported against the reference (the baseline peer) for information. The target compares
    the primary's median against `baseline`: a peer's name, the ideal seconds (a number),
    or None: then metric "rss" has an absolute RSS target, and target None means absolute
    figures for information only. peer_targets ({peer: ratio}) add targets against further
    peers; show_rss adds peak RSS against each peer (where memory matters as much as time)."""

    def __init__(self, letter, key, title, contenders, baseline, target, metric="wall",
                 peer_targets=None, show_rss=False):
        assert contenders[0].arun, "contenders[0] is arun"
        assert len({c.name for c in contenders}) == len(contenders), "names are unique"
        self.letter = letter
        self.key = key
        self.title = title
        self.contenders = contenders
        self.baseline = baseline
        self.target = target
        self.metric = metric
        self.peer_targets = peer_targets or {}
        self.show_rss = show_rss
        self.runs = {c.name: [] for c in contenders}

    @property
    def primary(self):
        return self.contenders[0].name

    def variants(self):
        return [c for c in self.contenders[1:] if c.arun]

    def peers(self):
        return [c for c in self.contenders if not c.arun]

    def reference(self):
        """What the variants are compared with: the baseline peer, else the primary."""
        return self.baseline if isinstance(self.baseline, str) else self.primary


class Bench:
    """Writes the workloads into the temporary directory, each letter by its own method,
    and the contenders they share (arun, xargs, ninja, the floor, the Rust runner)."""

    def __init__(self, arun, work, scale, rust_runner):
        self.arun = arun
        self.work = work
        self.scale = scale
        self.rust = rust_runner
        self.bash = "/bin/bash"
        self.xargs = shutil.which("xargs")
        self.ninja = shutil.which("ninja")
        if not self.xargs:
            raise SystemExit("bench-engine: xargs not found")
        self._floor = None
        self._floor_built = False
        self._written = set()

    def build(self, letters):
        builders = {"a": self.foreach_small, "b": self.sequential, "c": self.group_sleep,
                    "d": self.foreach_rss, "e": self.context_sweep, "f": self.group_rss,
                    "g": self.foreach_huge, "h": self.validate, "i": self.foreach_floor,
                    "j": self.agent_fan_out, "k": self.cached_fan_out}
        assert builders.keys() == WORKLOADS.keys()
        return [w for letter in sorted(letters) for w in builders[letter]()]

    def count(self, n):
        """n shrunk (or grown) by --scale, at least 1."""
        return max(1, round(n * self.scale))

    def file(self, name, make_text):
        """The path of work/name, written from make_text() (a string or its pieces) the first
        time it is asked for: several workloads share a recipe or an input."""
        path = os.path.join(self.work, name)
        if name not in self._written:
            write(path, make_text())
            self._written.add(name)
        return path

    # --- contenders ---

    def arun_run(self, name, recipe, jobs, check):
        return Contender(name, [self.arun, "-q", "--output-format", "json", "--max-concurrent",
                                str(jobs), *recipe_limit(recipe), recipe], check, arun=True)

    def xargs_run(self, count, jobs, command="true"):
        seq = self.file(f"seq{count}", lambda: (f"{i}\n" for i in range(count)))
        return Contender(f"xargs -P{jobs}", [self.xargs, f"-P{jobs}", "-I{}", self.bash, "-c",
                                             command], check_exit, stdin=seq)

    def floor_runs(self, count, jobs):
        """The floor as a one-element list, or none when it cannot be compiled."""
        if not self._floor_built:
            self._floor = compile_c(self.work, "floor", FLOOR_C, "the floor is left out")
            self._floor_built = True
        if not self._floor:
            return []
        return [Contender(f"floor -P{jobs}", [self._floor, str(count), str(jobs)],
                          check_floor(count))]

    def ninja_runs(self, count, jobs):
        if not self.ninja:
            print("bench-engine: ninja not found, (a) runs without it", file=sys.stderr)
            return []
        ninja_dir = os.path.join(self.work, f"ninja{count}")
        os.makedirs(ninja_dir, exist_ok=True)
        # Outputs are never created, so every edge is dirty on every round; the log is
        # deleted too so that no round knows about an earlier one.
        write(os.path.join(ninja_dir, "build.ninja"),
              "rule t\n  command = /bin/bash -c true\n"
              + "".join(f"build out{i}: t\n" for i in range(count)))
        ninja_log = os.path.join(ninja_dir, ".ninja_log")

        def forget():
            if os.path.exists(ninja_log):
                os.unlink(ninja_log)

        return [Contender(f"ninja -j{jobs}", [self.ninja, "-C", ninja_dir, f"-j{jobs}"],
                          check_ninja(count), before=forget)]

    def rust_runs(self, name, recipe, validate=False):
        """The Rust runner on recipe, as a one-element list; none without --rust-runner or
        when the recipe is over its size limit. It runs a recipe with `recipe-runner FILE`
        (JSON result with --output-format json; --no-auto-stage: no `git add` after agent
        steps) and checks one with --validate-only (no agent resolution)."""
        if not self.rust:
            return []
        if os.path.getsize(recipe) > RUST_RECIPE_LIMIT:
            print(f"bench-engine: {os.path.basename(recipe)} is over the Rust runner's "
                  f"{RUST_RECIPE_LIMIT} bytes, it is left out there", file=sys.stderr)
            return []
        mode = ["--validate-only"] if validate else ["--output-format", "json", "--no-auto-stage"]
        # Without this it asks api.github.com for a newer release on every run: its 24-hour
        # cooldown is kept under HOME, which is new here.
        env = {"RECIPE_RUNNER_NO_UPDATE_CHECK": "1"}
        return [Contender(name, [self.rust, *mode, recipe], check_rust, env=env)]

    def group_file(self, count, command):
        name = f"group-{count}-{command.replace(' ', '-')}"
        return self.file(name + ".yaml", lambda: group_recipe(name, count, command))

    def foreach_file(self, count, key_name="", key_value=None):
        """The foreach recipe of `count` items, with the extra context key `ballast`."""
        if not key_value:
            name = f"foreach-{count}"
            return self.file(name + ".yaml", lambda: foreach_recipe(name, count))
        name = f"foreach-{count}-ctx-{key_name.replace(' ', '-')}"
        extra = itertools.chain(["  ballast: "], key_value(), ["\n"])
        return self.file(name + ".yaml", lambda: foreach_recipe(name, count, extra))

    # --- the workloads, one method a letter ---

    def foreach_small(self):
        """(a) 1,000 parallel iterations of `true`, 8 at a time."""
        n = self.count(1000)
        recipe = self.foreach_file(n)
        # The Rust runner has no foreach: its fan-out is a parallel group.
        rust = self.rust_runs("recipe-runner group", self.group_file(n, "true"))
        contenders = [self.arun_run("arun", recipe, 8, check_arun(1, n)), self.xargs_run(n, 8),
                      *self.ninja_runs(n, 8), *self.floor_runs(n, 8), *rust]
        return [Workload("a", "foreach_1000", f"(a) foreach {n} x true, -j8", contenders,
                         "xargs -P8", 1.10)]

    def sequential(self):
        """(b) 200 sequential steps of `true`."""
        n = self.count(200)
        recipe = self.file(f"sequential-{n}.yaml", lambda: sequential_recipe(f"sequential-{n}", n))
        return [Workload("b", "sequential_200", f"(b) {n} sequential true", [
            self.arun_run("arun", recipe, 8, check_arun(n)),
            Contender("bash loop", [self.bash, "-c",
                                    f"for i in $(seq {n}); do /bin/bash -c true || exit 1; done"],
                      check_exit),
            *self.rust_runs("recipe-runner", recipe),
        ], "bash loop", 1.10)]

    def group_sleep(self):
        """(c) a parallel group of 200 x `sleep 0.05`, 50 at a time: ideally 4 waves of 50 ms."""
        n = self.count(200)
        recipe = self.group_file(n, "sleep 0.05")
        return [Workload("c", "group_200_sleep", f"(c) group {n} x sleep 0.05, -j50", [
            self.arun_run("arun", recipe, 50, check_arun(n)),
            self.xargs_run(n, 50, "sleep 0.05"),
        ], math.ceil(n / 50) * 0.05, 2.5)]

    def foreach_rss_workload(self, letter, count, jobs):
        """Peak RSS of `count` parallel iterations, `jobs` at a time (and their wall time)."""
        n = self.count(count)
        return [Workload(letter, f"foreach_{count}_rss", f"({letter}) foreach {n} x true, -j{jobs}", [
            self.arun_run("arun", self.foreach_file(n), jobs, check_arun(1, n)),
            self.xargs_run(n, jobs), *self.floor_runs(n, jobs),
        ], None, 64 * MIB, metric="rss")]

    def foreach_rss(self):
        """(d) peak RSS of 10,000 parallel iterations, 64 at a time (and their wall time)."""
        return self.foreach_rss_workload("d", 10_000, 64)

    def context_sweep(self):
        """(e) (a) with an extra context key of growing size: the per-step cost must not grow
        with the context (each bash step exports the context as RECIPE_VAR_*)."""
        n = self.count(1000)
        variants = [self.arun_run(f"arun ctx {size}", self.foreach_file(n, size, value), 8,
                                  check_arun(1, n))
                    for size, value in CONTEXT_SWEEP]
        return [Workload("e", "context_sweep_1000", f"(e) foreach {n} x true, -j8, ctx 0",
                         [*variants, self.xargs_run(n, 8), *self.floor_runs(n, 8)],
                         "xargs -P8", 1.10)]

    def group_rss(self):
        """(f) peak RSS of a parallel group of 20,000 steps, 8 at a time."""
        n = self.count(20_000)
        recipe = self.group_file(n, "true")
        return [Workload("f", "group_20000_rss", f"(f) group {n} x true, -j8", [
            self.arun_run("arun", recipe, 8, check_arun(n)), self.xargs_run(n, 8),
            *self.rust_runs("recipe-runner", recipe),
        ], None, 64 * MIB, metric="rss")]

    def foreach_huge(self):
        """(g) peak RSS of 100,000 parallel iterations, 8 at a time (slow: only when named)."""
        return self.foreach_rss_workload("g", 100_000, 8)

    def validate(self):
        """(h) `arun validate` of generated recipes of 5,000 and 20,000 steps: wall time and
        peak RSS, absolute (against the Rust runner's --validate-only when given)."""
        agents = os.path.join(self.work, "agents")
        os.makedirs(os.path.join(agents, "team"), exist_ok=True)
        write(os.path.join(agents, "team", "reviewer.md"),
              "---\nname: reviewer\n---\nYou review.\n")
        workloads = []
        for steps in (5000, 20_000):
            n = self.count(steps)
            name = f"validate-{n}"
            recipe = self.file(name + ".yaml", lambda: generated_recipe(name, n))
            arun = Contender("arun", [self.arun, "validate", "--agent-cli", "fake", "--agent-dir",
                                      agents, *recipe_limit(recipe), recipe], check_exit,
                             arun=True)
            rust = self.rust_runs("recipe-runner", recipe, validate=True)
            workloads.append(Workload("h", f"validate_{steps}", f"(h) validate {n} steps",
                                      [arun, *rust], None, None, show_rss=True))
        return workloads

    def foreach_floor(self):
        """(i) issue 16's figure: 10,000 parallel iterations, 8 at a time, within 1.05x
        xargs -P8 and 1.20x the floor."""
        n = self.count(10_000)
        inline = self.file(f"foreach-{n}-inline.yaml", lambda: inline_foreach_recipe(f"foreach-{n}-inline", n))
        return [Workload("i", "foreach_10000_j8", f"(i) foreach {n} x true, -j8", [
            self.arun_run("arun", self.foreach_file(n), 8, check_arun(1, n)),
            self.arun_run("arun, list in the step", inline, 8, check_arun(1, n)),
            self.xargs_run(n, 8), *self.floor_runs(n, 8),
        ], "xargs -P8", 1.05, peer_targets={"floor -P8": 1.20})]


    def agent_fan_out(self):
        """(j) issue 18's figure: 200 agent steps through --agent-command with a tiny shell
        script as the agent, 16 at a time, against xargs -P16 running the same script on a
        prompt file 200 times: the agent path's own overhead (prompt files, persona
        resolution, environment, reply handling), within 1.10x."""
        n = self.count(200)
        agent = os.path.join(self.work, "agent.sh")
        if not os.path.exists(agent):
            write(agent, [AGENT_SH])
            os.chmod(agent, 0o755)
        prompt = self.file("agent-prompt.txt", lambda: ["item 0\n"])
        recipe = self.file(f"agents-{n}.yaml", lambda: agent_recipe(f"agents-{n}", n))
        arun = Contender("arun", [self.arun, "-q", "--output-format", "json", "--max-concurrent", "16",
                                  "--agent-command", f"{agent} {{prompt_file}}", recipe],
                         check_arun(1, n), arun=True)
        seq = self.file(f"seq{n}", lambda: (f"{i}\n" for i in range(n)))
        xargs = Contender("xargs -P16", [self.xargs, "-P16", "-I{}", agent, prompt], check_exit, stdin=seq)
        return [Workload("j", "agents_200_j16", f"(j) {n} agent steps, -j16", [arun, xargs],
                         "xargs -P16", 1.10)]


    def cached_fan_out(self):
        """(k) issue 19's figure: a foreach of 1,000 items with `cache: true`, 8 at a time, run
        again with the cache its first run filled: the second run (every item a hit, no
        child) within 5% of the first's time. Each round's first run starts from an empty
        cache; the second finds it full (filled untimed when a first run has not just done
        it)."""
        n = self.count(1000)
        recipe = self.file(f"cached-{n}.yaml", lambda: cached_recipe(f"cached-{n}", n))
        cache = os.path.join(self.work, "cache-k")
        warm = os.path.join(self.work, "cache-k.warm")
        base = [self.arun, "-q", "--output-format", "json", "--max-concurrent", "8", "--cache-dir", cache,
                *recipe_limit(recipe), recipe]

        def empty():
            shutil.rmtree(cache, ignore_errors=True)
            if os.path.exists(warm):
                os.unlink(warm)

        def filled():
            if os.path.exists(warm):
                return
            subprocess.run(base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            write(warm, [""])

        def all_cached(run):
            error = check_arun(1, n)(run)
            if error:
                return error
            cached = json.loads(run.stdout())["step_results"][0]["iterations"].get("cached", 0)
            return None if cached == n else f"{cached} of {n} items came from the cache"

        second = Contender("arun, second run", base, all_cached, before=filled, arun=True)
        first = Contender("arun, first run", base, check_arun(1, n), before=empty)
        return [Workload("k", "cached_1000_second_run", f"(k) cached foreach {n} x sleep 0.05, -j8",
                         [second, first], "arun, first run", 0.05)]


# --- running and reporting -------------------------------------------------------------


def run_rounds(workloads, rounds, env, work, meter):
    out_dir = os.path.join(work, "out")
    os.mkdir(out_dir)
    for r in range(rounds):
        started = time.perf_counter()
        for w in workloads:
            # Rotate the order so that no contender always runs right after another one.
            k = r % len(w.contenders)
            for c in w.contenders[k:] + w.contenders[:k]:
                if c.before:
                    c.before()
                run = spawn(c.argv, dict(env, **c.env), c.stdin, out_dir, meter)
                error = c.check(run)
                if error:
                    raise RunFailed(f"{w.title}: {c.name} failed: {error}\n"
                                    f"  command: {' '.join(c.argv)}\n"
                                    f"  stderr: {run.stderr_tail()}")
                w.runs[c.name].append(run)
        print(f"bench-engine: round {r + 1}/{rounds} done in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)


def summary(runs, attr):
    values = [getattr(run, attr) for run in runs]
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "all": values}


def ratio(figures, a, b, what="wall_s"):
    """Contender a's median over contender b's (what: wall_s, cpu_s or maxrss_bytes)."""
    c = figures["contenders"]
    return c[a][what]["median"] / c[b][what]["median"]


def round_ratio(w, a, b):
    """Less sensitive to drift than the ratio of medians: the median of each round's own
    wall-time ratio of contender a to b."""
    return statistics.median(x.wall / y.wall for x, y in zip(w.runs[a], w.runs[b]))


def evaluate(w):
    """Returns the figures of one workload as a dict (also what --json writes)."""
    contenders = {}
    for name, runs in w.runs.items():
        contenders[name] = {"wall_s": summary(runs, "wall"), "cpu_s": summary(runs, "cpu"),
                            "maxrss_bytes": summary(runs, "maxrss")}
    primary = w.primary
    figures = {"title": w.title, "metric": w.metric, "primary": primary,
               "contenders": contenders, "target": w.target}
    if w.metric == "rss":
        value = contenders[primary]["maxrss_bytes"]["median"]
        figures["value"] = value
        figures["pass"] = value <= w.target
    elif w.target is not None:
        if isinstance(w.baseline, str):
            base = contenders[w.baseline]["wall_s"]["median"]
            figures["median_round_ratio"] = round_ratio(w, primary, w.baseline)
        else:
            base = w.baseline
        figures["baseline"] = w.baseline if isinstance(w.baseline, str) else "ideal"
        figures["baseline_s"] = base
        figures["ratio"] = contenders[primary]["wall_s"]["median"] / base
        figures["pass"] = figures["ratio"] <= w.target
    else:
        figures["pass"] = None  # absolute figures, for information
    others = [name for name in w.runs if name != primary]
    figures["wall_ratios"] = {name: ratio(figures, primary, name) for name in others}
    figures["cpu_ratios"] = {name: ratio(figures, primary, name, "cpu_s") for name in others}
    figures["peer_targets"] = {
        name: {"target": target, "ratio": figures["wall_ratios"][name],
               "median_round_ratio": round_ratio(w, primary, name),
               "pass": figures["wall_ratios"][name] <= target}
        for name, target in w.peer_targets.items() if name in w.runs}
    reference = w.reference()
    figures["variants"] = {
        c.name: {"reference": reference, "wall_ratio": ratio(figures, c.name, reference),
                 "cpu_ratio": ratio(figures, c.name, reference, "cpu_s"),
                 "median_round_ratio": round_ratio(w, c.name, reference)}
        for c in w.variants()}
    return figures


def fmt_s(summary_):
    return f"{summary_['median']:.3f} s ({summary_['min']:.3f})"


def fmt_mib(summary_):
    return f"{summary_['median'] / MIB:.1f} MiB ({summary_['min'] / MIB:.1f})"


def verdict(passed):
    return "info" if passed is None else "PASS" if passed else "MISS"


def cpu_cell(figures, a, b):
    """Median CPU seconds of a's whole process tree over b's (blank for the ideal)."""
    if b not in figures["contenders"]:
        return ""
    return f"{ratio(figures, a, b, 'cpu_s'):.2f}x"


def workload_rows(w, f):
    """The table rows of one workload: the primary against its target, then the other
    peers, the variants of arun and, with show_rss, peak RSS against each peer."""
    primary = w.primary
    c = f["contenders"]
    wall = fmt_s(c[primary]["wall_s"])
    rows = []
    if w.metric == "rss":
        rows.append((w.title + ": peak RSS", fmt_mib(c[primary]["maxrss_bytes"]), "", "", "",
                     f"<= {w.target / MIB:.0f} MiB", verdict(f["pass"]), ""))
        label = "    wall"  # the rows below compare wall times
    elif w.target is not None:
        base = f["baseline"]
        peer = fmt_s(c[base]["wall_s"]) if base != "ideal" else f"{f['baseline_s']:.3f} s"
        rows.append((w.title, wall, base, peer, f"{f['ratio']:.2f}x", f"<= {w.target:.2f}x",
                     verdict(f["pass"]), cpu_cell(f, primary, base)))
        label = ""
    else:
        rows.append((w.title, wall, "", "", "", "", "info", ""))
        label = ""
    # Peers other than the baseline: for information, or against a target of their own.
    for peer in w.peers():
        if peer.name == w.baseline:
            continue
        target = f["peer_targets"].get(peer.name)
        rows.append((label, wall if label else "", peer.name, fmt_s(c[peer.name]["wall_s"]),
                     f"{f['wall_ratios'][peer.name]:.2f}x",
                     f"<= {target['target']:.2f}x" if target else "",
                     verdict(target["pass"] if target else None),
                     cpu_cell(f, primary, peer.name)))
        label = ""
    # The variants of arun, each against the reference, for information.
    for variant in w.variants():
        v = f["variants"][variant.name]
        rows.append((f"    {variant.name}", fmt_s(c[variant.name]["wall_s"]), v["reference"],
                     fmt_s(c[v["reference"]]["wall_s"]), f"{v['wall_ratio']:.2f}x", "", "info",
                     f"{v['cpu_ratio']:.2f}x"))
    if w.show_rss:
        rss = fmt_mib(c[primary]["maxrss_bytes"])
        peers = [peer.name for peer in w.peers()]
        if not peers:
            rows.append(("    peak RSS", rss, "", "", "", "", "info", ""))
        for i, name in enumerate(peers):
            rows.append(("    peak RSS" if i == 0 else "", rss if i == 0 else "", name,
                         fmt_mib(c[name]["maxrss_bytes"]),
                         f"{ratio(f, primary, name, 'maxrss_bytes'):.2f}x", "", "info", ""))
    return rows


def table(workloads, results):
    rows = [("workload", "arun med (min)", "peer", "peer med (min)", "ratio", "target",
             "result", "cpu ratio")]
    for w in workloads:
        rows += workload_rows(w, results[w.key])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
                     for row in rows)


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": platform.release(),
            "loadavg_at_start": list(os.getloadavg())}


def fmt_load(loadavg):
    return " ".join(f"{x:.2f}" for x in loadavg)


def arun_version(arun):
    done = subprocess.run([arun, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def parse_args():
    letters = "; ".join(f"{letter}: {text}" for letter, text in WORKLOADS.items())
    default = "".join(letter for letter in WORKLOADS if letter not in OPT_IN)
    parser = argparse.ArgumentParser(
        description="arun engine benchmark: arun against peers, medians over interleaved rounds",
        epilog="The floor (N x /bin/bash -c true with posix_spawn + waitpid, P at once) is "
               "compiled with cc into the temporary directory; without cc it is left out.")
    parser.add_argument("--arun", required=True, help="the arun binary (a Release build)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--only", metavar="LETTERS",
                        help=f"run only these workloads, e.g. --only ab ({letters}). Default: "
                             f"{default}; {', '.join(OPT_IN)} only when named")
    parser.add_argument("--scale", type=float, default=1.0, metavar="F",
                        help="multiply every step, item and iteration count by F (at least 1 "
                             "each; not the context sizes of (e)), e.g. 0.1 for a quick try; "
                             "figures at another scale are not comparable with the targets")
    parser.add_argument("--rust-runner", metavar="PATH",
                        help="the Rust recipe runner (recipe-runner-rs of "
                             "amplihack-recipe-runner), a further peer of a, b, f and h")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (printed)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not args.scale > 0:
        parser.error("--scale must be greater than 0")
    args.arun = os.path.abspath(args.arun)
    if not os.access(args.arun, os.X_OK):
        parser.error(f"{args.arun} is not an executable")
    if args.rust_runner:
        args.rust_runner = os.path.abspath(args.rust_runner)
        if not os.access(args.rust_runner, os.X_OK):
            parser.error(f"{args.rust_runner} is not an executable")
    args.only = set(args.only.replace(",", "")) if args.only else set(default)
    if not args.only:
        parser.error("--only selected no workload")
    if not args.only <= WORKLOADS.keys():
        parser.error(f"--only takes letters among {', '.join(WORKLOADS)}")
    return args


def main():
    args = parse_args()
    arun = args.arun
    work = tempfile.mkdtemp(prefix="arun-bench-engine-")
    try:
        # No run writes into the real home or session store (DESIGN.md §4).
        env = dict(os.environ, HOME=os.path.join(work, "home"),
                   XDG_STATE_HOME=os.path.join(work, "state"),
                   XDG_CACHE_HOME=os.path.join(work, "cache"),
                   ARUN_SESSION_DIR=os.path.join(work, "sessions"))
        env.pop("ARUN_CACHE_DIR", None)
        os.mkdir(env["HOME"])
        meter = compile_c(work, "meter", METER_C, "contenders are started from Python, "
                          "whose own RSS is then a floor under every peak RSS")
        workloads = Bench(arun, work, args.scale, args.rust_runner).build(args.only)
        info = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "machine": machine(), "arun": arun, "arun_version": arun_version(arun),
                "rust_runner": args.rust_runner, "rounds": args.rounds, "scale": args.scale,
                "workloads_run": "".join(sorted(args.only)), "meter": bool(meter)}
        print(f"bench-engine: {info['arun_version']}, {args.rounds} rounds, "
              f"{info['machine']['cpus']} CPUs ({info['machine']['cpu_model']}), "
              f"load average {fmt_load(info['machine']['loadavg_at_start'])} at the start",
              file=sys.stderr)
        # Untimed: brings the binary and its libraries into the page cache.
        spawn([arun, "--version"], env, None, work, meter)
        try:
            run_rounds(workloads, args.rounds, env, work, meter)
        except RunFailed as e:
            print(f"bench-engine: {e}", file=sys.stderr)
            return 1
        info["machine"]["loadavg_at_end"] = list(os.getloadavg())
        print(f"bench-engine: load average {fmt_load(info['machine']['loadavg_at_end'])} "
              "at the end", file=sys.stderr)
        results = {w.key: evaluate(w) for w in workloads}
        floor = ""
        if not meter:
            info["rss_floor_bytes"] = max(run.rss_floor for w in workloads
                                          for runs in w.runs.values() for run in runs)
            floor = (f"; no peak RSS is below the benchmark's own "
                     f"{info['rss_floor_bytes'] / MIB:.1f} MiB (no meter)")
        scale = f", scale {args.scale:g}" if args.scale != 1 else ""
        print(f"\narun engine benchmark, {info['date']}, {args.rounds} rounds{scale}, "
              f"{info['machine']['cpus']} CPUs, load average "
              f"{info['machine']['loadavg_at_start'][0]:.2f} at the start and "
              f"{info['machine']['loadavg_at_end'][0]:.2f} at the end; "
              f"medians (min) of wall time{floor}\n")
        print(table(workloads, results))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(dict(info, workloads=results), f, indent=2)
                f.write("\n")
        return 0
    finally:
        if args.keep:
            print(f"bench-engine: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
