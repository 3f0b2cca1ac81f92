#!/usr/bin/env python3
"""The live status line on a real pseudo-terminal, during a 1,000-item fan-out (four-digit counters).

At 40 and 120 columns: the status is drawn (more than a few times), every draw fits the width
(one column to spare) and carries the counters ([step/total], done/1000, the elapsed time), no
draw holds a newline (never more than one status line), ordinary lines always come after an
erase, and the status is gone at the end. Piped, or with TERM=dumb, stderr holds no escape
code at all; `--progress live` draws it through a pipe too. No child outlives its run.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from leftovers import processes_with
from terminal import ERASE, arun_argument, check, on_pty, report

ITEMS = 1000  # enough for many draws; four digits, the widest counters at 40 columns


def run_on_pty(arun, args, cols, cwd, env=None):
    """Runs arun on a pty of `cols` columns; returns (exit, output)."""
    run = on_pty(arun, args, cwd, cols=cols, env=env)
    code = run.finish(600)
    return code, run.text()


def visible_columns(text):
    return len(re.sub(r"\x1b\[[0-9;]*m", "", text))


def check_live(output, cols, label, with_result=True):
    # The pty turns "\n" into "\r\n"; the status line never holds either.
    text = output.replace("\r\n", "\n")
    pieces = text.split(ERASE)
    # Piece 0 precedes the first erase: ordinary lines only.
    check(pieces[0] == "" or pieces[0].endswith("\n"), f"{label}: text before the first status ends a line")
    statuses = []
    for piece in pieces[1:]:
        lines, _, status = piece.rpartition("\n")
        # After an erase: ordinary lines (each ended), or a status, never both on one row.
        check(lines == "" or status == "", f"{label}: a status and lines share an erase: {piece!r}")
        if status:
            statuses.append(status)
    fan = [s for s in statuses if f"/{ITEMS}" in s]
    check(len(fan) >= 5, f"{label}: the fan-out's status was drawn {len(fan)} times")
    for s in statuses:
        check("\n" not in s and "\r" not in s, f"{label}: a status holds a line break: {s!r}")
        check(visible_columns(s) <= cols - 1, f"{label}: status wider than {cols - 1} columns: {s!r}")
        check(re.match(r"\[\d/3\] ", s) is not None, f"{label}: no [step/total] counter in {s!r}")
        check(re.search(r"\b\d+:\d\d\b", s) is not None, f"{label}: no elapsed time in {s!r}")
    for s in fan:
        check(re.search(rf"\b\d+/{ITEMS}\b", s) and re.search(r"\d+ run", s), f"{label}: fan counters missing in {s!r}")
    if cols >= 120:
        check(any("fan " in s and "ETA " in s for s in fan), f"{label}: the wide status names the loop and its ETA")
    # The run ended: the last thing written is a finished line, not a status.
    check(text.endswith("\n") or text.endswith(ERASE), f"{label}: a status line is left at the end")
    if with_result:  # on the terminal, stdout's result comes after the progress
        check("fan-status: completed" in text, f"{label}: the run's result is missing")



def main():
    arun = arun_argument(__doc__)
    work = tempfile.mkdtemp(prefix="arun-status-")
    marker = f"status-test-{os.getpid()}"
    try:
        recipe = os.path.join(work, "fan.yaml")
        with open(recipe, "w") as f:
            f.write("name: fan-status\nsteps:\n"
                    "  - id: prepare\n    command: sleep 0.3\n"
                    f"  - id: fan\n    foreach: '{json.dumps(list(range(ITEMS)))}'\n    as: n\n    parallel: true\n"
                    f"    command: \": {marker}; [ $(( {{{{n}}}} % 7 )) -ne 0 ] || sleep 0.01\"\n"
                    "  - id: finish\n    command: echo done\n")
        sessions = os.path.join(work, "sessions")
        base = [recipe, "--session-dir", sessions, "-j8"]
        for cols in (40, 120):
            code, out = run_on_pty(arun, base + ["--color", "always"], cols, work)
            check(code == 0, f"{cols} columns: exit {code}")
            check_live(out, cols, f"{cols} columns")
        # TERM=dumb on a terminal: plain lines, no escape code.
        code, out = run_on_pty(arun, base, 80, work, {"TERM": "dumb"})
        check(code == 0 and "\x1b" not in out, "TERM=dumb: escape codes on the terminal")
        check(".. fan " in out, "TERM=dumb: no plain loop summaries")
        # Piped: plain and bounded; --progress live insists on the status line.
        piped = subprocess.run([arun] + base, cwd=work, capture_output=True, text=True)
        check(piped.returncode == 0 and "\x1b" not in piped.stderr, "piped: escape codes in stderr")
        check(len(piped.stderr.splitlines()) < 40, f"piped: {len(piped.stderr.splitlines())} lines for {ITEMS} items")
        # Bytes: text mode would turn the status line's "\r" into a newline.
        forced = subprocess.run([arun] + base + ["--progress", "live"], cwd=work, capture_output=True,
                                env=dict(os.environ, COLUMNS="100"))
        check(forced.returncode == 0 and ERASE.encode() in forced.stderr, "--progress live through a pipe: no status line")
        check_live(forced.stderr.decode(), 100, "--progress live through a pipe", with_result=False)
        left = processes_with(marker)
        check(not left, f"processes left behind: {left}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report("status line: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
