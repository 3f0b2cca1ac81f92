#!/usr/bin/env python3
"""README.md's example recipe runs and prints what README.md shows.

The first ```yaml block is written to NAME.yaml in a temp directory and run as
`arun NAME.yaml` with progress piped (plain); the following ```text block must equal
stderr then stdout, after normalising what changes from run to run: session ids, durations,
and the plain progress's `..` counting lines (how many appear depends on timing).

Usage: readme_test.py --arun BINARY --repo REPO
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def normalise(text):
    text = re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "SESSION", text)
    text = re.sub(r"\d+\.\d+s\b", "Ns", text)
    return [line for line in text.splitlines() if not line.startswith("  .. ")]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arun", required=True)
    p.add_argument("--repo", required=True)
    a = p.parse_args()
    a.arun = os.path.abspath(a.arun)
    readme = open(os.path.join(a.repo, "README.md")).read()
    recipe = re.search(r"```yaml\n(.*?)```", readme, re.S).group(1)
    shown = re.search(r"```yaml\n.*?```.*?```text\n(.*?)```", readme, re.S).group(1)
    name = re.search(r"^name: (\S+)", recipe, re.M).group(1)
    tmp = tempfile.mkdtemp(prefix="arun-readme-")
    try:
        open(os.path.join(tmp, f"{name}.yaml"), "w").write(recipe)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARUN_", "XDG_"))}
        env.update(HOME=tmp, ARUN_SESSION_DIR=os.path.join(tmp, "sessions"), NO_COLOR="1")
        r = subprocess.run([a.arun, f"{name}.yaml"], cwd=tmp, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        got = normalise(r.stderr.decode() + r.stdout.decode())
        want = normalise(shown)
        if r.returncode != 0 or got != want:
            print(f"README.md's example: exit {r.returncode}; expected (normalised):")
            print("\n".join(want))
            print("got:")
            print("\n".join(got))
            return 1
        print(f"README.md's example prints the {len(want)} lines README.md shows")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
