#!/usr/bin/env python3
"""Questions on a terminal and the live status line (docs/running.md, "The status line").

On a real pseudo-terminal with the default `--progress auto`: an approval gate (tutorial 11's
shape) asks `approve? [y/N]`; two seconds later (the status line's clock has changed twice)
the question is still the last thing on the screen, the status line that was shown before it
was erased (no stale copy above the question), and the typed answer is echoed, also when the
terminal had echo off (`stty -echo`). After the answer the run goes on and completes. A
`--secret NAME` typed at the same terminal is never echoed. No child outlives its run.
"""
import os
import shutil
import sys
import tempfile

from leftovers import processes_with
from terminal import ERASE, arun_argument, check, on_pty, report

QUESTION = "approve? [y/N] "


def approval_on_terminal(arun, work, recipe, echo):
    label = "approval" + ("" if echo else " (stty -echo)")
    run = on_pty(arun, [recipe, "--session-dir", os.path.join(work, "sessions")], work, echo)
    asked = run.read_for(30, until=QUESTION)
    check(asked, f"{label}: no question in {run.text()!r}")
    if not asked:
        run.finish(5)
        return
    run.read_for(2.0)  # the status line's clock changes meanwhile
    screen = run.text()
    after = screen[screen.rindex(QUESTION) + len(QUESTION):]
    check(after == "", f"{label}: drawn after the question within 2 s: {after!r}")
    # The status line shown before the question was erased: no stale copy in the scrollback.
    before = screen[:screen.index("arun: approval needed")]
    check(before.endswith(ERASE + "\r\n"), f"{label}: a status line is left above the question: {before[-120:]!r}")
    run.type(b"y\r")
    run.read_for(1.0, until=QUESTION + "y")
    code = run.finish()
    text = run.text()
    check(QUESTION + "y\r\n" in text, f"{label}: the answer was not echoed: {text[text.find(QUESTION):][:80]!r}")
    check(code == 0, f"{label}: exit {code}")
    check("released 2.0.1" in text, f"{label}: the run did not go on after the answer")
    check(text.endswith("\n") or text.endswith(ERASE), f"{label}: a status line is left at the end")


def secret_on_terminal(arun, work, recipe):
    secret = "hunter2-TYPED-5150"
    run = on_pty(arun, [recipe, "--session-dir", os.path.join(work, "sessions"), "--secret", "TOKEN"], work)
    asked = run.read_for(30, until="(not shown): ")
    check(asked, f"secret: no prompt in {run.text()!r}")
    if asked:
        run.type(secret.encode() + b"\r")
    code = run.finish()
    check(code == 0, f"secret: exit {code}: {run.text()!r}")
    check(secret not in run.text(), "secret: the typed value was echoed")
    check("secret checked" in run.text(), "secret: the step did not get the typed value")


def main():
    arun = arun_argument(__doc__)
    work = tempfile.mkdtemp(prefix="arun-question-")
    marker = f"question-test-{os.getpid()}"
    try:
        gate = os.path.join(work, "gate.yaml")
        with open(gate, "w") as f:  # tutorial 11's shape
            f.write("name: approvals-and-resume\ncontext:\n  version: '2.0.1'\nsteps:\n"
                    f"  - id: build\n    command: 'echo built {{{{version}}}}; : {marker}'\n"
                    "  - id: go-live\n    requires_approval: true\n    approval_prompt: 'Release {{version}}?'\n"
                    "  - id: release\n    command: 'echo released {{version}}'\n")
        approval_on_terminal(arun, work, gate, echo=True)
        approval_on_terminal(arun, work, gate, echo=False)
        secret = os.path.join(work, "secret.yaml")
        with open(secret, "w") as f:
            f.write("name: typed-secret\nsteps:\n"
                    f"  - id: use\n    command: '[ \"$TOKEN\" = hunter2-TYPED-5150 ] && echo secret checked; : {marker}'\n")
        secret_on_terminal(arun, work, secret)
        left = processes_with(marker)
        check(not left, f"processes left behind: {left}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report("questions on a terminal: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
