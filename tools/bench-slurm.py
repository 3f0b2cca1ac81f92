#!/usr/bin/env python3
"""Slurm executor benchmark (docs/performance.md): the same recipes with --executor slurm on a
private single-node cluster (tools/lib/slurm_cluster.py) and with the local executor, run in
the same invocation, interleaved, medians over rounds.

Workloads (both at --max-concurrent 64):
  true     a foreach of 200 x `true`: what a step costs on each executor
  sleep    a foreach of 1,000 x `sleep 1`: throughput when the work is real
  wide     a foreach of 10,000 x `true` (only with --only wide): the submissions a large
           fan-out costs
For each Slurm run arun's log gives the jobs submitted, the sbatch calls that carried them
(arrays batch the jobs started together) and the squeue calls made; the report shows
per-step overhead, jobs per second, sbatch calls and squeue calls per minute. This
is a report: nothing is asserted about time.

  tools/bench-slurm.py --arun build/release/src/cli/arun [--rounds 3] [--only true] [--json FILE]

The cluster has one node with --cpus CPUs (OverSubscribe=FORCE:32 lets 64 jobs run on two).
Exit status: 0 every run succeeded, 1 a run failed, 2 usage error or no Slurm here.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
import slurm_cluster  # noqa: E402

WORKLOADS = {
    "true": ("foreach 200 x true, -j64", 200, "true"),
    "sleep": ("foreach 1000 x sleep 1, -j64", 1000, "sleep 1"),
    # Not run by default (it needs more than a 2-vCPU machine, where the private cluster's
    # reaping falls behind): how many submissions a 10,000-item fan-out costs, cut at the
    # cluster's MaxArraySize.
    "wide": ("foreach 10000 x true, -j64", 10000, "true"),
}
DEFAULT_WORKLOADS = ("true", "sleep")
JOBS = 64
STATS = re.compile(r"slurm: (\d+) jobs submitted in (\d+) sbatch calls \((\d+) arrays\), (\d+) taken up from an "
                   r"earlier run, (\d+) squeue calls(?:, (\d+) array task limit updates)?")


def recipe(count, command):
    return (f"name: bench\ncontext:\n  items: {json.dumps(list(range(count)))}\nsteps:\n"
            f"  - id: each\n    foreach: \"{{{{items}}}}\"\n    max_iterations: {count}\n"
            f"    parallel: true\n    command: {command}\n")


def run_once(arun, path, executor, env, work):
    sessions = Path(tempfile.mkdtemp(prefix="sessions-", dir=work))
    argv = [arun, str(path), "-q", "--max-concurrent", str(JOBS), "--session-dir", str(sessions),
            "--executor", executor]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{executor} run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    figures = {"wall": wall}
    for log in sessions.glob("*/arun.log"):
        for match in STATS.finditer(log.read_text()):
            figures.update(jobs=int(match.group(1)), sbatch_calls=int(match.group(2)), arrays=int(match.group(3)),
                           squeue_calls=int(match.group(5)), limit_updates=int(match.group(6) or 0))
    shutil.rmtree(sessions, ignore_errors=True)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arun", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args()
    args.arun = str(Path(args.arun).resolve())
    why = slurm_cluster.unavailable_reason()
    if why:
        print(f"bench-slurm: no Slurm here: {why}", file=sys.stderr)
        return 2
    chosen = args.only or list(DEFAULT_WORKLOADS)
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "rounds": args.rounds, "jobs": JOBS, "workloads": {}}
    work = Path(tempfile.mkdtemp(prefix="arun-bench-slurm-"))
    try:
        with slurm_cluster.SlurmCluster(cpus=args.cpus) as cluster:
            env = dict(slurm_cluster.clean_environment(), **cluster.env())
            for name in chosen:
                title, count, command = WORKLOADS[name]
                path = work / f"{name}.yaml"
                path.write_text(recipe(count, command))
                runs = {"local": [], "slurm": []}
                for round_index in range(args.rounds):
                    order = ["local", "slurm"] if round_index % 2 == 0 else ["slurm", "local"]
                    for executor in order:
                        runs[executor].append(run_once(args.arun, path, executor, env, work))
                        cluster.wait_queue_empty(60)
                local = statistics.median(r["wall"] for r in runs["local"])
                slurm = statistics.median(r["wall"] for r in runs["slurm"])
                sbatch_calls = statistics.median(r.get("sbatch_calls", 0) for r in runs["slurm"])
                polls = statistics.median(r.get("squeue_calls", 0) for r in runs["slurm"])
                updates = statistics.median(r.get("limit_updates", 0) for r in runs["slurm"])
                figures = {
                    "title": title, "steps": count, "local_wall": local, "slurm_wall": slurm,
                    "ratio": slurm / local,
                    "overhead_per_step_ms": (slurm - local) / count * 1000,
                    "sbatch_calls": sbatch_calls, "jobs_per_second": count / slurm,
                    "sbatch_calls_per_second": sbatch_calls / slurm,
                    "squeue_calls": polls, "squeue_calls_per_minute": polls / slurm * 60,
                    "limit_updates": updates,
                    "runs": runs,
                }
                report["workloads"][name] = figures
                print(f"{title}: local {local:.2f} s, slurm {slurm:.2f} s ({figures['ratio']:.2f}x); "
                      f"{figures['overhead_per_step_ms']:.1f} ms more per step; "
                      f"{figures['jobs_per_second']:.1f} jobs/s in {sbatch_calls:.0f} sbatch calls; "
                      f"{polls:.0f} squeue calls ({figures['squeue_calls_per_minute']:.0f}/min), "
                      f"{updates:.0f} array task limit updates", flush=True)
    except RuntimeError as error:
        print(f"bench-slurm: {error}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
