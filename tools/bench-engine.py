#!/usr/bin/env python3
"""Engine benchmark (docs/performance.md): arun against peers run in the same invocation.

Generates the workloads in a temporary directory, then runs every contender of every
workload once per round, rotating the order each round, and reports the median and the
minimum of each and the ratio of the medians. The machines are shared and noisy (figures
drift up to 3x between minutes), so absolute seconds mean little: compare contenders run
seconds apart, as here, never figures from different invocations.

  tools/bench-engine.py --arun build/release/src/cli/arun --rounds 9 --json figures.json

Exit status: 0 when every run succeeded (MISS rows included: this is a report, not a
test), 1 when a run failed (its figures would be worthless), 2 on a usage error.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MIB = 1024 * 1024


class RunFailed(Exception):
    pass


class Run:
    """One finished child: wall seconds, CPU seconds of its whole tree, peak RSS."""

    def __init__(self, wall, exit_code, rusage, stdout_path, stderr_path):
        self.wall = wall
        self.exit_code = exit_code
        self.cpu = rusage.ru_utime + rusage.ru_stime
        # wait4's ru_maxrss is the largest of the child and its reaped descendants (KiB).
        self.maxrss = rusage.ru_maxrss * 1024
        self.stdout_path = stdout_path
        self.stderr_path = stderr_path

    def stdout(self):
        with open(self.stdout_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stderr_tail(self, limit=2000):
        with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-limit:]


def spawn(argv, env, stdin_path, out_dir):
    """Runs argv to completion with posix_spawn + wait4 (the same launch path for every
    contender) and returns a Run. stdout and stderr go to files under out_dir."""
    stdout_path = os.path.join(out_dir, "stdout")
    stderr_path = os.path.join(out_dir, "stderr")
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
    return Run(wall, os.waitstatus_to_exitcode(status), rusage, stdout_path, stderr_path)


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


def check_ninja(edges):
    def check(run):
        error = check_exit(run)
        if error:
            return error
        if f"[{edges}/{edges}]" not in run.stdout():
            return f"ninja did not report [{edges}/{edges}]"
        return None

    return check


# --- workloads -------------------------------------------------------------------------


class Contender:
    def __init__(self, name, argv, check, stdin=None, before=None):
        self.name = name
        self.argv = argv
        self.check = check
        self.stdin = stdin
        self.before = before  # run untimed before each measurement


class Workload:
    """contenders[0] is arun. The target compares arun's median against `baseline`: a
    peer's name, the ideal seconds (a number), or None for an absolute RSS target."""

    def __init__(self, letter, key, title, contenders, baseline, target, metric="wall"):
        self.letter = letter
        self.key = key
        self.title = title
        self.contenders = contenders
        self.baseline = baseline
        self.target = target
        self.metric = metric
        self.runs = {c.name: [] for c in contenders}


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def foreach_recipe(name, count):
    items = ", ".join(str(i) for i in range(count))
    # Default limits: a 10,000-item loop must fit max_total_steps and max_iterations as they are.
    return (f"name: {name}\n"
            f"context:\n  items: [{items}]\nsteps:\n"
            "  - id: each\n    command: 'true'\n    foreach: '{{items}}'\n    parallel: true\n")


def make_workloads(arun, work, only):
    bash = "/bin/bash"
    xargs = shutil.which("xargs")
    ninja = shutil.which("ninja")
    if not xargs:
        raise SystemExit("bench-engine: xargs not found")

    def arun_argv(recipe, concurrency):
        return [arun, "-q", "--output-format", "json", "--max-concurrent", str(concurrency),
                recipe]

    def seq_file(count):
        return write(os.path.join(work, f"seq{count}"), "".join(f"{i}\n" for i in range(count)))

    workloads = []

    # (a) 1,000 parallel iterations of `true`, 8 at a time.
    recipe = write(os.path.join(work, "foreach-1000.yaml"), foreach_recipe("foreach-1000", 1000))
    contenders = [
        Contender("arun", arun_argv(recipe, 8), check_arun(1, 1000)),
        Contender("xargs -P8", [xargs, "-P8", "-I{}", bash, "-c", "true"], check_exit,
                  stdin=seq_file(1000)),
    ]
    if ninja:
        ninja_dir = os.path.join(work, "ninja")
        os.mkdir(ninja_dir)
        # Outputs are never created, so every edge is dirty on every round; the log is
        # deleted too so that no round knows about an earlier one.
        write(os.path.join(ninja_dir, "build.ninja"),
              "rule t\n  command = /bin/bash -c true\n"
              + "".join(f"build out{i}: t\n" for i in range(1000)))
        ninja_log = os.path.join(ninja_dir, ".ninja_log")

        def forget():
            if os.path.exists(ninja_log):
                os.unlink(ninja_log)

        contenders.append(Contender("ninja -j8", [ninja, "-C", ninja_dir, "-j8"],
                                    check_ninja(1000), before=forget))
    else:
        print("bench-engine: ninja not found, (a) runs without it", file=sys.stderr)
    workloads.append(Workload("a", "foreach_1000", "(a) foreach 1000 x true, -j8", contenders,
                              "xargs -P8", 1.10))

    # (b) 200 sequential steps of `true`.
    recipe = write(os.path.join(work, "sequential-200.yaml"),
                   "name: sequential-200\nsteps:\n"
                   + "".join(f"  - id: s{i}\n    command: 'true'\n" for i in range(200)))
    workloads.append(Workload("b", "sequential_200", "(b) 200 sequential true", [
        Contender("arun", arun_argv(recipe, 8), check_arun(200)),
        Contender("bash loop", [bash, "-c",
                                "for i in $(seq 200); do /bin/bash -c true || exit 1; done"],
                  check_exit),
    ], "bash loop", 1.10))

    # (c) a parallel group of 200 x `sleep 0.05`, 50 at a time: ideally 4 waves of 50 ms.
    recipe = write(os.path.join(work, "group-200.yaml"),
                   "name: group-200\nsteps:\n"
                   + "".join(f"  - id: p{i}\n    command: sleep 0.05\n    parallel_group: g\n"
                             for i in range(200)))
    workloads.append(Workload("c", "group_200_sleep", "(c) group 200 x sleep 0.05, -j50", [
        Contender("arun", arun_argv(recipe, 50), check_arun(200)),
        Contender("xargs -P50", [xargs, "-P50", "-I{}", bash, "-c", "sleep 0.05"], check_exit,
                  stdin=seq_file(200)),
    ], 200 / 50 * 0.05, 2.5))

    # (d) peak RSS of 10,000 parallel iterations, 64 at a time (and their wall time).
    recipe = write(os.path.join(work, "foreach-10000.yaml"),
                   foreach_recipe("foreach-10000", 10000))
    workloads.append(Workload("d", "foreach_10000_rss", "(d) foreach 10000 x true, -j64", [
        Contender("arun", arun_argv(recipe, 64), check_arun(1, 10000)),
        Contender("xargs -P64", [xargs, "-P64", "-I{}", bash, "-c", "true"], check_exit,
                  stdin=seq_file(10000)),
    ], None, 64 * MIB, metric="rss"))

    if only:
        workloads = [w for w in workloads if w.letter in only]
    return workloads


# --- running and reporting -------------------------------------------------------------


def run_rounds(workloads, rounds, env, work):
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
                run = spawn(c.argv, env, c.stdin, out_dir)
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


def evaluate(w):
    """Returns the figures of one workload as a dict (also what --json writes)."""
    contenders = {}
    for name, runs in w.runs.items():
        contenders[name] = {"wall_s": summary(runs, "wall"), "cpu_s": summary(runs, "cpu"),
                            "maxrss_bytes": summary(runs, "maxrss")}
    arun = contenders["arun"]
    figures = {"title": w.title, "metric": w.metric, "contenders": contenders,
               "target": w.target}
    if w.metric == "rss":
        value = arun["maxrss_bytes"]["median"]
        figures["value"] = value
        figures["pass"] = value <= w.target
    else:
        if isinstance(w.baseline, str):
            base = contenders[w.baseline]["wall_s"]["median"]
        else:
            base = w.baseline
        figures["baseline"] = w.baseline if isinstance(w.baseline, str) else "ideal"
        figures["baseline_s"] = base
        figures["ratio"] = arun["wall_s"]["median"] / base
        if isinstance(w.baseline, str):
            # Less sensitive to drift than the ratio of medians: each round's own ratio.
            figures["median_round_ratio"] = statistics.median(
                a.wall / p.wall for a, p in zip(w.runs["arun"], w.runs[w.baseline]))
        figures["pass"] = figures["ratio"] <= w.target
    figures["wall_ratios"] = {name: arun["wall_s"]["median"] / c["wall_s"]["median"]
                              for name, c in contenders.items() if name != "arun"}
    return figures


def fmt_s(summary_):
    return f"{summary_['median']:.3f} s ({summary_['min']:.3f})"


def cpu_ratio(figures, peer):
    """Median CPU seconds of arun's whole process tree over the peer's (blank for ideal)."""
    if peer not in figures["contenders"]:
        return ""
    arun = figures["contenders"]["arun"]["cpu_s"]["median"]
    return f"{arun / figures['contenders'][peer]['cpu_s']['median']:.2f}x"


def table(workloads, results):
    rows = [("workload", "arun med (min)", "peer", "peer med (min)", "ratio", "target",
             "result", "cpu ratio")]
    for w in workloads:
        f = results[w.key]
        arun = f["contenders"]["arun"]
        if w.metric == "rss":
            rss = arun["maxrss_bytes"]
            rows.append((w.title + ": peak RSS",
                         f"{rss['median'] / MIB:.1f} MiB ({rss['min'] / MIB:.1f})", "", "", "",
                         f"<= {w.target / MIB:.0f} MiB", "PASS" if f["pass"] else "MISS", ""))
            title = "    wall"
        else:
            base = f["baseline"]
            peer = (fmt_s(f["contenders"][base]["wall_s"]) if base != "ideal"
                    else f"{f['baseline_s']:.3f} s")
            rows.append((w.title, fmt_s(arun["wall_s"]), base, peer, f"{f['ratio']:.2f}x",
                         f"<= {w.target:.2f}x", "PASS" if f["pass"] else "MISS",
                         cpu_ratio(f, base)))
            title = ""
        # Peers without a target: for information.
        for name in w.runs:
            if name == "arun" or name == w.baseline:
                continue
            peer = f["contenders"][name]["wall_s"]
            ratio = arun["wall_s"]["median"] / peer["median"]
            rows.append((title, fmt_s(arun["wall_s"]) if title else "", name, fmt_s(peer),
                         f"{ratio:.2f}x", "", "info", cpu_ratio(f, name)))
            title = ""
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


def arun_version(arun):
    done = subprocess.run([arun, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def main():
    parser = argparse.ArgumentParser(
        description="arun engine benchmark: arun against peers, medians over interleaved rounds")
    parser.add_argument("--arun", required=True, help="the arun binary (a Release build)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--only", metavar="LETTERS",
                        help="run only these workloads, e.g. --only ab (a: foreach 1000, "
                             "b: sequential 200, c: parallel group, d: foreach 10000 RSS)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (printed)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    arun = os.path.abspath(args.arun)
    if not os.access(arun, os.X_OK):
        parser.error(f"{arun} is not an executable")
    only = set(args.only.replace(",", "")) if args.only else None
    if only and not only <= set("abcd"):
        parser.error("--only takes letters among a, b, c, d")

    work = tempfile.mkdtemp(prefix="arun-bench-engine-")
    try:
        # No run writes into the real home or session store (DESIGN.md §4).
        env = dict(os.environ, HOME=os.path.join(work, "home"),
                   XDG_STATE_HOME=os.path.join(work, "state"),
                   ARUN_SESSION_DIR=os.path.join(work, "sessions"))
        os.mkdir(env["HOME"])
        workloads = make_workloads(arun, work, only)
        if not workloads:
            parser.error("--only selected no workload")
        info = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "machine": machine(), "arun": arun, "arun_version": arun_version(arun),
                "rounds": args.rounds}
        print(f"bench-engine: {info['arun_version']}, {args.rounds} rounds, "
              f"{info['machine']['cpus']} CPUs ({info['machine']['cpu_model']}), "
              f"load {info['machine']['loadavg_at_start'][0]:.2f}", file=sys.stderr)
        # Untimed: brings the binary and its libraries into the page cache.
        spawn([arun, "--version"], env, None, work)
        try:
            run_rounds(workloads, args.rounds, env, work)
        except RunFailed as e:
            print(f"bench-engine: {e}", file=sys.stderr)
            return 1
        results = {w.key: evaluate(w) for w in workloads}
        print(f"\narun engine benchmark, {info['date']}, {args.rounds} rounds, "
              f"{info['machine']['cpus']} CPUs; medians (min) of wall time\n")
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
