#!/usr/bin/env python3
"""Every tutorial runs as written and prints what its page shows.

Usage: tutorials_test.py --arun PATH/TO/arun --repo REPO [--only NN ...] [-v]

The pages are REPO/docs/tutorials/NN-*.md. What this test reads in them:

Recipe blocks
    A ```yaml block whose nearest non-blank line above is a Markdown link to a file of
    recipes/ ending in `.yaml` or `.yml`, such as
        [`recipes/tutorials/01-hello.yaml`](../../recipes/tutorials/01-hello.yaml):
    must equal that file byte for byte (the file's final newline aside). Every
    recipes/tutorials/**/*.yaml must be shown on some page, and every page must be linked
    from docs/tutorials/README.md.

Console blocks
    In a ```console block, a line starting with `$ ` is a command; a command line ending in
    ` \\` goes on with the next line. The lines up to the next command (or the end of the
    block) are its expected output: stdout and stderr together, as one pipe receives them.
    A command ends with status 0 unless its line ends with a comment `# exit N`.

    The commands run with bash, one after the other, in a fresh directory per page holding a
    copy of REPO/recipes (so a tutorial that writes files never writes into the repository;
    the pages say "from the repository root"). `arun` is the binary given with --arun, first
    on PATH. The environment is the test's own, with HOME, XDG_CONFIG_HOME, XDG_STATE_HOME,
    XDG_CACHE_HOME and XDG_DATA_HOME in a fresh directory per page (so the sessions are
    there, under ~/.local/state/arun/sessions); every other XDG_*, every ARUN_*,
    AMPLIHACK_* and FAKE_AGENT_* variable, CLAUDECODE, BASH_ENV, ENV and CDPATH removed;
    NO_COLOR=1, TERM=dumb and ARUN_FAKE_AGENT=REPO/tools/fake-agent (what `--agent-cli fake`
    runs). stdin is /dev/null and the output a pipe, not a terminal: arun prints plain
    progress, without colour and without the live status line, and an approval gate stops
    the run (exit 5). Only the NN-*.md pages are run, not README.md.

Comparison, after these normalisations:
    - trailing blanks of every line and trailing empty lines are dropped, on both sides;
    - in the actual output, the page's temporary home directory is written `~`;
    - in an expected line, `…` matches any text (also none) within the line, and a line that
      is just `…` matches any number of lines (also none);
    - a duration with two decimals and an `s` (`0.01s`, `12.34s`) matches any such duration;
    - `<NAME>` (upper-case letters, digits, `_`) matches a run of non-blank characters and
      captures it: later `<NAME>`s on the same page, in expected output and in commands, stand
      for the captured text (`arun resume <ID>` resumes the session the first run printed).

Afterwards no process started by a page may be alive: every process whose environment holds
this run's marker variable (every process the commands start inherits it), or whose command
line names its temporary directory, is reported (and then killed, by pid).

Exits 0 when every page passes; prints one block per failure otherwise.
"""

import argparse
import difflib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import jsonschema

COMMAND_TIMEOUT = 60  # seconds, per command
FENCE_RE = re.compile(r"^```(\S*)\s*$")
RECIPE_LINK_RE = re.compile(r"\]\(((?:\.\./)+recipes/[^)\s]+\.ya?ml)\)")
EXIT_RE = re.compile(r"\s#\s*exit\s+(\d+)\s*$")
TOKEN_RE = re.compile(r"…|<([A-Z][A-Z0-9_]*)>|\d+\.\d\ds(?![A-Za-z0-9])")
PLACEHOLDER_RE = re.compile(r"<([A-Z][A-Z0-9_]*)>")
MARKER_NAME = "ARUN_TUTORIAL_TEST_MARKER"


class PageError(Exception):
    pass


def blocks(text):
    """(language, first line number, lines, the nearest non-blank line above) of each fence."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise PageError(f"line {start + 1}: a ``` block is never closed")
        out.append((lang, start + 1, lines[i + 1:j], before))
        i = j + 1
    return out


def commands(block_lines, first_line):
    """(line number, command, expected exit code, expected output lines) of a console block."""
    out = []
    i = 0
    while i < len(block_lines):
        line = block_lines[i]
        if not line.startswith("$ "):
            raise PageError(f"line {first_line + i + 1}: output before the first `$ ` command")
        number = first_line + i + 1
        cmd = line[2:]
        while cmd.endswith("\\") and i + 1 < len(block_lines):
            i += 1
            cmd += "\n" + block_lines[i]
        i += 1
        expected = []
        while i < len(block_lines) and not block_lines[i].startswith("$ "):
            expected.append(block_lines[i])
            i += 1
        m = EXIT_RE.search(cmd.split("\n")[-1])
        out.append((number, cmd, int(m.group(1)) if m else 0, expected))
    return out


def tidy(lines):
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def line_pattern(line, captured, pending):
    """The regular expression of one expected line (see the module's docstring)."""
    if line.strip() == "…":
        return r"(?:[^\n]*\n)*?"
    out, pos = [], 0
    for m in TOKEN_RE.finditer(line):
        out.append(re.escape(line[pos:m.start()]))
        token = m.group(0)
        if token == "…":
            out.append(r"[^\n]*?")
        elif m.group(1):
            name = m.group(1)
            if name in captured:
                out.append(re.escape(captured[name]))
            elif name in pending:
                out.append(f"(?P={name})")
            else:
                pending.add(name)
                out.append(rf"(?P<{name}>\S+?)")
        else:
            out.append(r"\d+\.\d\ds")
        pos = m.end()
    out.append(re.escape(line[pos:]))
    return "".join(out) + r"\n"


def compare(expected, actual, captured):
    """None when `actual` (lines) matches `expected` (lines); else a readable difference.
    Captures of <NAME> placeholders are added to `captured`."""
    pending = set()
    pattern = "".join(line_pattern(line, captured, pending) for line in expected)
    text = "".join(line + "\n" for line in actual)
    m = re.fullmatch(pattern, text)
    if m:
        captured.update({k: v for k, v in m.groupdict().items() if v is not None})
        return None
    # Capture what the lines that do match hold, so the page's later commands can still run.
    for e in expected:
        if PLACEHOLDER_RE.search(e) and e.strip() != "…":
            p = re.compile(line_pattern(e, captured, set()))
            m = next((m for m in (p.fullmatch(a + "\n") for a in actual) if m), None)
            if m:
                captured.update({k: v for k, v in m.groupdict().items() if v is not None})
    # A diff of the lines: an actual line that some expected line matches on its own is shown
    # as that expected line, so durations and ids do not hide the lines that really differ.
    patterns = [(e, re.compile(line_pattern(e, captured, set()))) for e in expected if e.strip() != "…"]
    shown = []
    for a in actual:
        same = next((e for e, p in patterns if p.fullmatch(a + "\n")), None)
        shown.append(same if same is not None else a)
    diff = "\n".join(difflib.unified_diff(expected, shown, "page", "actual", lineterm="", n=2))
    return diff or "(the lines match one by one, but not as a whole: check the `…` lines and repeated <NAME>s)"


def leftovers(marker, tmp_root):
    """Pids of live processes that carry the marker in their environment or name tmp_root."""
    found = []
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                    continue  # a zombie waiting for its parent is not running
        except OSError:
            continue  # it ended while we looked, or it is not ours
        if marker.encode() in env or tmp_root.encode() in cmdline:
            found.append(int(pid))
    return found


def run_page(page, args, tmp_root, marker, verbose):
    """Runs one page's commands; returns a list of failure texts."""
    repo = pathlib.Path(args.repo).resolve()
    failures = []
    text = page.read_text(encoding="utf-8")
    try:
        found = blocks(text)
    except PageError as e:
        return [f"{page.name}: {e}"], set()

    shown = set()
    for lang, line, body, before in found:
        link = RECIPE_LINK_RE.search(before)
        if lang not in ("yaml", "yml") or not link:
            continue
        target = (page.parent / link.group(1)).resolve()
        shown.add(target)
        if not target.is_file():
            failures.append(f"{page.name}:{line}: the recipe block names {link.group(1)}, which does not exist")
            continue
        want = target.read_text(encoding="utf-8").rstrip("\n").split("\n")
        if body != want:
            diff = "\n".join(difflib.unified_diff(want, body, str(target.relative_to(repo)), page.name,
                                                  lineterm="", n=1))
            failures.append(f"{page.name}:{line}: the recipe block differs from {target.relative_to(repo)}\n{diff}")

    work = pathlib.Path(tempfile.mkdtemp(prefix=page.stem + "-", dir=tmp_root))
    home, cwd, bindir = work / "home", work / "repo", work / "bin"
    for d in (home, bindir):
        d.mkdir()
    shutil.copytree(repo / "recipes", cwd / "recipes", symlinks=True)
    (bindir / "arun").symlink_to(pathlib.Path(args.arun).resolve())

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ARUN_", "AMPLIHACK_", "FAKE_AGENT_", "XDG_"))
           and k not in ("CLAUDECODE", "NO_COLOR", "BASH_ENV", "ENV", "CDPATH")}
    env.update({
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "NO_COLOR": "1",
        "TERM": "dumb",
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "ARUN_FAKE_AGENT": str(repo / "tools" / "fake-agent"),
        MARKER_NAME: marker,
    })

    captured = {}
    console = [(line, body) for lang, line, body, _ in found if lang == "console"]
    if not console:
        failures.append(f"{page.name}: no ```console block")
    for first_line, body in console:
        try:
            cmds = commands(body, first_line)
        except PageError as e:
            failures.append(f"{page.name}: {e}")
            continue
        for number, cmd, want_exit, expected in cmds:
            unknown = [n for n in PLACEHOLDER_RE.findall(cmd) if n not in captured]
            if unknown:
                failures.append(f"{page.name}:{number}: `{cmd}` uses <{unknown[0]}> before any output captured it")
                continue
            real = PLACEHOLDER_RE.sub(lambda m: captured[m.group(1)], cmd)
            if verbose:
                print(f"  $ {real}", flush=True)
            start = time.monotonic()
            proc = subprocess.Popen(["bash", "-c", real], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                out, _ = proc.communicate(timeout=COMMAND_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                failures.append(f"{page.name}:{number}: `{cmd}` ran longer than {COMMAND_TIMEOUT}s")
                continue
            if verbose:
                print(f"    exit {proc.returncode} in {time.monotonic() - start:.2f}s", flush=True)
            actual = out.decode("utf-8", "replace").replace(str(home), "~").split("\n")
            problems = []
            if proc.returncode != want_exit:
                problems.append(f"exit status {proc.returncode}, the page says {want_exit}")
            diff = compare(tidy(expected), tidy(actual), captured)
            if diff:
                problems.append("the output differs from the page:\n" + diff)
            if problems:
                failures.append(f"{page.name}:{number}: `{cmd}`\n" + "\n".join(problems))
    failures += report_sessions(page, args, env, cwd, home / ".local" / "state" / "arun" / "sessions")
    return failures, shown


def report_sessions(page, args, env, cwd, root):
    """`arun report` of every session the page made: the JSON document matches its schema and
    the session's state, and the HTML page holds it (docs/report-and-dashboard.md)."""
    failures = []
    schema = json.loads((pathlib.Path(args.repo) / "schema" / "report.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for state_file in sorted(root.glob("*/state.json")) if root.is_dir() else []:
        sid = state_file.parent.name
        p = subprocess.run([args.arun, "report", sid, "--output-format", "json"], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        if p.returncode != 0:
            failures.append(f"{page.name}: arun report {sid}: exit {p.returncode}: {p.stderr.strip()[:300]}")
            continue
        doc = json.loads(p.stdout)
        for e in list(validator.iter_errors(doc))[:3]:
            failures.append(f"{page.name}: arun report {sid}: report.schema.json at {e.json_path}: {e.message[:200]}")
        state = json.loads(state_file.read_text())
        if doc["session"]["status"] != state["status"] or doc["session"]["recipe_name"] != state.get("recipe_name"):
            failures.append(f"{page.name}: arun report {sid}: status {doc['session']['status']}, state {state['status']}")
        html_path = cwd / f"arun-report-{sid}.html"
        p = subprocess.run([args.arun, "report", sid, "-o", str(html_path)], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        if p.returncode != 0 or '<script type="application/json" id="report-data">' not in html_path.read_text():
            failures.append(f"{page.name}: arun report {sid} -o FILE: exit {p.returncode}, no data in the page")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arun", required=True, help="the arun binary")
    ap.add_argument("--repo", required=True, help="the repository root")
    ap.add_argument("--only", action="append", default=[], help="run only pages starting with this (repeatable)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each command as it runs")
    args = ap.parse_args()
    repo = pathlib.Path(args.repo).resolve()
    tutorials = repo / "docs" / "tutorials"
    pages = sorted(p for p in tutorials.glob("[0-9][0-9]-*.md"))
    failures = []
    if len(pages) < 12:
        failures.append(f"docs/tutorials has {len(pages)} tutorial pages; at least 12 are expected")

    index = (tutorials / "README.md").read_text(encoding="utf-8") if (tutorials / "README.md").is_file() else ""
    for p in pages:
        if f"]({p.name})" not in index:
            failures.append(f"docs/tutorials/README.md does not link to {p.name}")

    marker = uuid.uuid4().hex
    tmp_root = tempfile.mkdtemp(prefix="arun-tutorials-")
    shown = set()
    started = time.monotonic()
    try:
        for page in pages:
            if args.only and not any(page.name.startswith(o) for o in args.only):
                continue
            t0 = time.monotonic()
            page_failures, page_shown = run_page(page, args, tmp_root, marker, args.verbose)
            shown |= page_shown
            failures += page_failures
            print(f"{'ok  ' if not page_failures else 'FAIL'} {page.name} ({time.monotonic() - t0:.1f}s)", flush=True)
        if not args.only:
            for recipe in sorted((repo / "recipes" / "tutorials").rglob("*.y*ml")):
                if recipe.resolve() not in shown:
                    failures.append(f"{recipe.relative_to(repo)} is not shown on any tutorial page")
        left = leftovers(marker, tmp_root)
        deadline = time.monotonic() + 3
        while left and time.monotonic() < deadline:  # a process may still be on its way out
            time.sleep(0.1)
            left = leftovers(marker, tmp_root)
        for pid in left:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    what = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                what = "?"
            failures.append(f"process {pid} outlived its tutorial: {what}")
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)

    for f in failures:
        print(f"\nFAIL: {f}")
    print(f"\n{len(pages)} pages, {len(failures)} failures, {time.monotonic() - started:.1f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
