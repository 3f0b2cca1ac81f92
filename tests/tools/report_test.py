#!/usr/bin/env python3
"""`arun report`: one self-contained HTML file of a session, and its data as JSON.

Checks, on sessions made here: the HTML page holds the same document as `--output-format json`
(generated_at aside), loads nothing from anywhere (a Content-Security-Policy of 'none', no
URL in any src or href), and keeps a step's output that spells `</script>` as data; the file is
the owner's only (0600), named arun-report-ID.html unless -o says otherwise (`-o -`: stdout);
a failure is listed with its excerpt and log tail, retries by reason, counts agree with the
journal; a 3,000-item fan-out's report stays bounded (600 bars, 240 bins); a live run is
reported as live with instances running; a run killed with SIGKILL as interrupted, its last
run `killed`; an unknown session is refused with exit 2. No child outlives its run.
"""
import html.parser
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from leftovers import processes_with
from terminal import arun_argument, check, report


class Page(html.parser.HTMLParser):
    """What the report page loads and holds: src/href values, the CSP, the data script."""

    def __init__(self):
        super().__init__()
        self.urls, self.csp, self.data, self.scripts = [], None, None, 0
        self._in_data = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href", "action", "srcset", "poster"):
            if key in a:
                self.urls.append(a[key])
        if tag == "meta" and a.get("http-equiv", "").lower() == "content-security-policy":
            self.csp = a.get("content")
        if tag == "script":
            self.scripts += 1
            self._in_data = a.get("id") == "report-data"

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_data = False

    def handle_data(self, data):
        if self._in_data:
            self.data = (self.data or "") + data


def run(arun, args, cwd, **kw):
    return subprocess.run([arun] + args, cwd=cwd, capture_output=True, text=True, timeout=120, **kw)


def report_json(arun, sessions, sid, cwd):
    p = run(arun, ["report", sid, "--session-dir", sessions, "--output-format", "json"], cwd)
    check(p.returncode == 0, f"report {sid} --output-format json: exit {p.returncode}: {p.stderr[-500:]}")
    return json.loads(p.stdout) if p.returncode == 0 else None


def session_ids(sessions):
    return sorted(os.listdir(sessions)) if os.path.isdir(sessions) else []


def main():
    arun = arun_argument(__doc__)
    work = tempfile.mkdtemp(prefix="arun-report-")
    marker = f"report-test-{os.getpid()}"
    try:
        sessions = os.path.join(work, "sessions")
        # 1. A finished run with a failure, a retry, a parallel group and an output that
        # spells the end of the data script.
        recipe = os.path.join(work, "mixed.yaml")
        with open(recipe, "w") as f:
            f.write("name: mixed\nsteps:\n"
                    "  - id: hostile\n    command: \"echo '</script><script>alert(1)</script>'\"\n"
                    "  - id: lint\n    parallel_group: checks\n    command: echo lint\n"
                    "  - id: unit\n    parallel_group: checks\n    command: echo unit\n"
                    "  - id: flaky\n    retry: {max_attempts: 2, delay: 0}\n"
                    f"    command: \": {marker}; [ -e flag ] || {{ touch flag; echo 'refused' >&2; exit 1; }}\"\n"
                    "  - id: fan\n    foreach: '[1, 2, 3]'\n    as: n\n    parallel: true\n    on_error: continue\n"
                    "    command: \"[ {{n}} != 2 ] || { echo 'error: item two is broken' >&2; exit 3; }\"\n")
        p = run(arun, [recipe, "--session-dir", sessions, "-q"], work)
        check(p.returncode == 0, f"mixed.yaml: exit {p.returncode}")  # on_error: continue
        sid = session_ids(sessions)[0]
        doc = report_json(arun, sessions, sid, work)
        if doc:
            check(doc["session"]["status"] == "completed" and doc["session"]["failed_instances"] == 1 and
                  not doc["session"]["live"], f"status {doc['session']}")
            check(doc["counts"]["failed"] == 1 and doc["counts"]["completed"] == 6, f"counts {doc['counts']}")
            fails = doc["failures"]["shown"]
            check(doc["failures"]["total"] == 1 and fails and fails[0]["instance"] == "fan[1]",
                  f"failures {doc['failures']}")
            if fails:
                check(fails[0]["exit_code"] == 3 and "error: item two is broken" in fails[0]["excerpt"],
                      f"failure excerpt {fails[0]}")
                check(fails[0]["fatal"] is False, "a failure its loop went on after is called fatal")
                log = fails[0]["log"] or {}
                check(log.get("stream") == "stderr" and "item two is broken" in log.get("text", ""), f"log tail {log}")
            check(doc["retries"]["total"] == 1 and doc["retries"]["by_reason"] ==
                  [{"step": "flaky", "reason": "exit code 1", "times": 1}], f"retries {doc['retries']}")
            steps = {s["step"]: s for s in doc["steps"]}
            check(steps.get("fan[]", {}).get("counts", {}).get("failed") == 1 and steps["flaky"]["attempts"] == 2,
                  f"steps {list(steps)}")
            check([r["ended"] for r in doc["runs"]] == ["ended"], f"runs {doc['runs']}")
            hostile = next((s for s in doc["timeline"]["steps"] if s["step"] == "hostile"), None)
            check(hostile is not None and hostile["status"] == "completed", f"timeline steps {doc['timeline']['steps']}")
        # The page: default name, 0600, the same document, nothing loaded, the output kept as data.
        p = run(arun, ["report", sid[:15], "--session-dir", sessions], work)
        page_path = os.path.join(work, f"arun-report-{sid}.html")
        check(p.returncode == 0 and os.path.exists(page_path), f"report {sid}: exit {p.returncode}: {p.stderr}")
        if os.path.exists(page_path):
            check(stat.S_IMODE(os.stat(page_path).st_mode) == 0o600, "the report file is not 0600")
            text = open(page_path, encoding="utf-8").read()
            page = Page()
            page.feed(text)
            check(page.csp is not None and "default-src 'none'" in page.csp, f"CSP {page.csp!r}")
            check(not page.urls, f"the page loads {page.urls}")
            check("http://" not in text.replace("http://www.w3.org", "") and "https://" not in text,
                  "the page names a web address")
            check(page.scripts == 2, f"{page.scripts} script elements: an output opened one of its own")
            check(text.count("</script>") == 2, "an output's </script> reached the page as markup")
            data = json.loads(page.data) if page.data else None
            if data and doc:
                data.pop("generated_at"), doc.pop("generated_at")
                check(data == doc, "the page's data is not the JSON document")
                out = next((s for s in data["timeline"]["steps"] if s["step"] == "hostile"), None)
                check(out is not None, "the page's data lost a step")
        p = run(arun, ["report", sid, "--session-dir", sessions, "-o", "-"], work)
        check(p.returncode == 0 and p.stdout.startswith("<!DOCTYPE html>"), "report -o -: no page on stdout")
        p = run(arun, ["report", sid, "--session-dir", sessions, "-o", os.path.join(work, "r.json"),
                       "--output-format", "json"], work)
        check(p.returncode == 0 and json.load(open(os.path.join(work, "r.json")))["session"]["id"] == sid,
              "report -o FILE --output-format json")
        # A failure that ended the run is fatal; the iteration and loop that only repeat it
        # are not listed again.
        fatal = os.path.join(work, "fatal.yaml")
        with open(fatal, "w") as f:
            f.write("name: fatal\nsteps:\n  - id: fan\n    foreach: '[1, 2]'\n    as: n\n    steps:\n"
                    "      - id: build\n        command: \"[ {{n}} != 2 ] || exit 4\"\n")
        fatal_sessions = os.path.join(work, "fatal-sessions")
        p = run(arun, [fatal, "--session-dir", fatal_sessions, "-q"], work)
        fdoc = report_json(arun, fatal_sessions, session_ids(fatal_sessions)[0], work) if p.returncode == 1 else None
        check(fdoc is not None and [(f["instance"], f["fatal"]) for f in fdoc["failures"]["shown"]] ==
              [("fan[1]/build", True)] and fdoc["failures"]["total"] == 1,
              f"fatal.yaml: exit {p.returncode}, failures {fdoc and fdoc['failures']}")
        # A nested loop's failure is listed once; a log whose last line is longer than the tail
        # still shows its end.
        nested = os.path.join(work, "nested.yaml")
        with open(nested, "w") as f:
            f.write("name: nested\nsteps:\n  - id: outer\n    foreach: '[1, 2]'\n    as: o\n    on_error: continue\n"
                    "    steps:\n      - id: inner\n        foreach: '[\"x\", \"y\"]'\n        as: i\n        steps:\n"
                    "          - id: leaf\n            command: \"[ {{o}}{{i}} != 2y ] || "
                    "{ head -c 10000 /dev/zero | tr '\\\\0' A >&2; echo >&2; exit 7; }\"\n")
        nested_sessions = os.path.join(work, "nested-sessions")
        p = run(arun, [nested, "--session-dir", nested_sessions, "-q"], work)
        ndoc = report_json(arun, nested_sessions, session_ids(nested_sessions)[0], work) if p.returncode == 0 else None
        check(ndoc is not None and ndoc["failures"]["total"] == 1 and
              [f["instance"] for f in ndoc["failures"]["shown"]] == ["outer[1]/inner[1]/leaf"],
              f"nested.yaml: exit {p.returncode}, failures {ndoc and ndoc['failures']['total']}")
        if ndoc and ndoc["failures"]["shown"]:
            log = ndoc["failures"]["shown"][0]["log"] or {}
            check(log.get("cut") and log.get("text", "").startswith("AAAA"), f"a long last line's tail: {log}")
        # Each run's command line is its own: an invocation that stopped before its run (an
        # --events file that cannot be made) is not taken for the resume's.
        before = set(session_ids(nested_sessions))
        p = run(arun, [nested, "--session-dir", nested_sessions, "-q", "--events", "/nonexistent/dir/ev.jsonl"], work)
        ids = sorted(set(session_ids(nested_sessions)) - before)  # ids made in one second sort by chance
        check(p.returncode == 2 and len(ids) == 1, f"--events in a missing folder: exit {p.returncode}, new sessions {ids}")
        if len(ids) == 1:
            p = run(arun, ["resume", ids[0], "--session-dir", nested_sessions, "-q"], work)
            rdoc = report_json(arun, nested_sessions, ids[0], work)
            runs = rdoc["runs"] if rdoc else []
            check(len(runs) == 1 and "resume" in runs[0].get("by", {}).get("argv", []),
                  f"the resumed run's command line: {runs}")
        p = run(arun, ["report", "nosuch", "--session-dir", sessions], work)
        check(p.returncode == 2 and "nosuch" in p.stderr, f"an unknown session: exit {p.returncode}, {p.stderr}")

        # 2. Bounded: a 3,000-item fan-out.
        big = os.path.join(work, "big.yaml")
        with open(big, "w") as f:
            f.write("name: big\nsteps:\n  - id: fan\n    foreach: '" + json.dumps(list(range(3000))) +
                    "'\n    as: n\n    parallel: true\n    command: \"true\"\n")
        big_sessions = os.path.join(work, "big-sessions")
        p = run(arun, [big, "--session-dir", big_sessions, "-q", "-j8"], work)
        check(p.returncode == 0, f"big.yaml: exit {p.returncode}")
        bsid = session_ids(big_sessions)[0]
        bdoc = report_json(arun, big_sessions, bsid, work)
        if bdoc:
            t = bdoc["timeline"]
            check(len(t["bars"]) == 600 and t["leaves"] == 3000 and len(t["concurrency"]) == 240,
                  f"bars {len(t['bars'])}, leaves {t['leaves']}, bins {len(t['concurrency'])}")
            check(1 <= t["max_concurrency"] <= 8, f"max concurrency {t['max_concurrency']} at -j8")
            loop = bdoc["loops"][0] if bdoc["loops"] else {}
            check(loop.get("items") == 3000 and loop["counts"]["completed"] == 3000, f"loops {bdoc['loops']}")
        p = run(arun, ["report", bsid, "--session-dir", big_sessions, "-o", os.path.join(work, "big.html")], work)
        size = os.path.getsize(os.path.join(work, "big.html")) if p.returncode == 0 else 0
        check(0 < size < 400_000, f"the 3,000-item report is {size} bytes")

        # 3. A live run, then the same run killed with SIGKILL.
        slow = os.path.join(work, "slow.yaml")
        with open(slow, "w") as f:
            f.write("name: slow\nsteps:\n  - id: fan\n    foreach: '" + json.dumps(list(range(40))) +
                    f"'\n    as: n\n    parallel: 4\n    command: \": {marker}; sleep 0.5\"\n")
        live_sessions = os.path.join(work, "live-sessions")
        proc = subprocess.Popen([arun, slow, "--session-dir", live_sessions, "-q"], cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ldoc = None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                ids = session_ids(live_sessions)
                if ids:
                    ldoc = report_json(arun, live_sessions, ids[0], work)
                    if ldoc and ldoc["counts"]["completed"] >= 4 and ldoc["counts"]["running"] > 0:
                        break
                time.sleep(0.2)
            check(ldoc is not None and ldoc["session"]["live"] and ldoc["counts"]["running"] > 0,
                  f"a live run: {ldoc and (ldoc['session'], ldoc['counts'])}")
            if ldoc:
                check([r["ended"] for r in ldoc["runs"]] == ["running"], f"live runs {ldoc['runs']}")
                check(ldoc["loops"] and ldoc["loops"][0]["counts"]["running"] > 0, f"live loops {ldoc['loops']}")
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            # The killed arun's children end with it (its supervisor); none is left behind.
            deadline = time.monotonic() + 10
            while processes_with(marker) and time.monotonic() < deadline:
                time.sleep(0.1)
            kdoc = report_json(arun, live_sessions, session_ids(live_sessions)[0], work)
            if kdoc:
                check(kdoc["session"]["interrupted"] and not kdoc["session"]["live"], f"killed: {kdoc['session']}")
                check([r["ended"] for r in kdoc["runs"]] == ["killed"], f"killed runs {kdoc['runs']}")
                check(kdoc["counts"]["running"] == 0 and kdoc["counts"]["killed"] > 0, f"killed counts {kdoc['counts']}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        left = processes_with(marker)
        check(not left, f"processes left behind: {left}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report("report: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
