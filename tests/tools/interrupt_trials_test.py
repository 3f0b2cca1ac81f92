#!/usr/bin/env python3
"""Ctrl-C on a terminal during a fan-out, many times: an interrupt is never a failure.

Each trial runs a 40-item fan-out (-j8) on a pseudo-terminal, whose children trap nothing,
ignore SIGTERM or exit 130 on it, presses Ctrl-C at a random moment, and checks: arun exits
130 (or 0 when the run finished first), no journal record and no step result says `failed`,
every instance that did not finish is `cancelled` or not recorded (so resume runs it again),
and no child outlives arun. Every tenth trial presses Ctrl-C the moment the session's
directory appears, before arun handles signals itself: the signal waits until the run can
stop cleanly, so the session always has its state. Then one resume of the last interrupted
session completes it. Trials run a few at a time (--workers), each on its own terminal.
"""
import argparse
import json
import multiprocessing
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile

import time

from leftovers import processes_with
from terminal import check, failures, on_pty


def run_on_pty(arun, args, cwd, press_after):
    """Runs arun on a pty, presses Ctrl-C after `press_after` seconds (or once `press_after()`
    is true, checked every millisecond); returns (exit, output)."""
    run = on_pty(arun, args, cwd)
    pid, fd = run.pid, run.fd
    out = bytearray()
    start = time.monotonic()
    pressed = False
    while True:
        due = press_after() if callable(press_after) else time.monotonic() - start >= press_after
        if not pressed and due:
            os.write(fd, b"\x03")  # the terminal sends SIGINT to the foreground group
            pressed = True
        try:
            ready, _, _ = select.select([fd], [], [], 0.001 if callable(press_after) and not pressed else 0.01)
            if ready:
                data = os.read(fd, 65536)
                if not data:
                    break
                out += data
        except OSError:
            break
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            try:
                while True:
                    data = os.read(fd, 65536)
                    if not data:
                        break
                    out += data
            except OSError:
                pass
            os.close(fd)
            return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")
        if time.monotonic() - start > 60:
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")



def write_recipe(path, marker):
    # Three kinds of child: plain, one that exits 130 on SIGTERM as a shell does after
    # Ctrl-C, one that ignores SIGTERM (killed after the grace).
    with open(path, "w") as f:
        f.write("name: interrupted\nsteps:\n"
                "  - id: fan\n    foreach: '" + json.dumps(list(range(40))) + "'\n    as: n\n    parallel: 8\n"
                "    command: |\n"
                f"      : {marker}\n"
                "      case $(( {{n}} % 3 )) in\n"
                "        1) trap 'exit 130' TERM ;;\n"
                "        2) trap '' TERM ;;\n"
                "      esac\n"
                "      sleep 0.$(( {{n}} % 4 + 1 )) & wait\n"
                "  - id: after\n    command: echo after\n")


def run_trials(arun, work, worker, trials, seed):
    """One worker's trials, one after the other, with its own recipe and marker (so that its
    check for leftovers sees only its own children). Returns (failures, interrupted, the last
    interrupted (session id, session root) or None)."""
    marker = f"interrupt-trial-{os.getpid()}-{worker}"
    recipe = os.path.join(work, f"fan-{worker}.yaml")
    write_recipe(recipe, marker)
    interrupted = 0
    last_interrupted = None
    for trial in trials:
        rng = random.Random(seed * 100003 + trial)  # a trial's moment does not depend on the workers
        session_dir = os.path.join(work, "sessions", str(trial))
        at_creation = lambda d=session_dir: os.path.isdir(d) and bool(os.listdir(d))
        code, out = run_on_pty(arun, [recipe, "--session-dir", session_dir, "--kill-grace", "0.2", "--progress",
                                      "plain"], work, at_creation if trial % 10 == 0 else rng.uniform(0.05, 1.2))
        if code == -signal.SIGINT and not at_creation():
            continue  # pressed while arun was still loading: nothing was made, nothing is lost
        check(code in (0, 130), f"trial {trial}: exit {code}\n{out[-2000:]}")
        ids = os.listdir(session_dir) if os.path.isdir(session_dir) else []
        if len(ids) != 1:
            check(False, f"trial {trial}: {len(ids)} sessions")
            continue
        session = os.path.join(session_dir, ids[0])
        with open(os.path.join(session, "journal.jsonl")) as f:
            records = [json.loads(line) for line in f if line.strip()]
        bad = [(r["instance"], r["result"].get("error")) for r in records if r["status"] == "failed"]
        check(not bad, f"trial {trial}: recorded failed: {bad}")
        if not os.path.exists(os.path.join(session, "state.json")):
            check(False, f"trial {trial}: the session has no state.json")
            continue
        with open(os.path.join(session, "state.json")) as f:
            state = json.load(f)
        if code == 130:
            interrupted += 1
            last_interrupted = ids[0], session_dir
            check(state["status"] == "cancelled", f"trial {trial}: state {state['status']}")
        left = processes_with(marker)
        if left:
            time.sleep(0.5)  # a child killed this instant may still be reaped
            left = processes_with(marker)
        check(not left, f"trial {trial}: processes left: {left}")
    return list(failures), interrupted, last_interrupted


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--arun", required=True)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=14)
    # A trial mostly waits (for its moment, for children's sleeps, for the kill grace): a few
    # at once take a fraction of the wall time and test the same thing.
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    arun = os.path.abspath(args.arun)
    work = tempfile.mkdtemp(prefix="arun-interrupts-")
    try:
        workers = max(1, args.workers)
        # Each worker is a process of its own: pty.fork from threads is not safe, and the
        # failures list of terminal.py is per process.
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.starmap(run_trials, [(arun, work, w, range(w, args.trials, workers), args.seed)
                                                for w in range(workers)])
        interrupted = sum(r[1] for r in results)
        for worker_failures, _, _ in results:
            failures.extend(worker_failures)
        last_interrupted = next((r[2] for r in reversed(results) if r[2]), None)
        check(interrupted >= args.trials // 2, f"only {interrupted} of {args.trials} trials were interrupted")
        if last_interrupted:
            sid, session_dir = last_interrupted
            resumed = subprocess.run([arun, "resume", sid, "--session-dir", session_dir, "-q", "--output-format", "json"],
                                     cwd=work, capture_output=True, text=True, timeout=120)
            check(resumed.returncode == 0, f"resume of {sid}: exit {resumed.returncode}: {resumed.stderr[-2000:]}")
            if resumed.returncode == 0:
                result = json.loads(resumed.stdout)
                check(result["step_results"][0]["iterations"]["completed"] == 40, "the resume did not finish the fan-out")
        print(f"interrupt trials: {args.trials} trials in {workers} workers, {interrupted} interrupted, "
              f"{len(failures)} failures")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
