#!/usr/bin/env python3
"""The completion scripts of `arun completions bash|zsh|fish` work in each shell.

Each shell sources the script arun prints and completes a set of command lines; the answers
come from `arun __complete` (the CLI11 model, discovery, the session directory), so the
checks cover subcommands, nested subcommands, options, option choices, recipe names,
session ids (only resumable ones after `resume`), a session's instances after `logs ID`, and
the agent CLIs on PATH after `--agent-cli`. bash goes through `complete -F` with COMP_WORDS; fish through `complete -C`;
zsh through the script's function with compsys's _describe and _files replaced by stubs
that print what they are given (zsh cannot complete without a terminal otherwise).

Usage: completions_test.py --arun BINARY
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from leftovers import processes_with  # noqa: E402

failures = []


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f"\n     {detail}"), flush=True)
    if not ok:
        failures.append(what)


def shell(argv, env, stdin=None, cwd=None):
    r = subprocess.run(argv, env=env, input=stdin, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return r.stdout.decode(), r.stderr.decode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arun", required=True)
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="arun-completions-")
    try:
        bin_dir = os.path.join(tmp, "bin")
        os.makedirs(bin_dir)
        os.symlink(os.path.abspath(a.arun), os.path.join(bin_dir, "arun"))
        work = os.path.join(tmp, "work")
        os.makedirs(os.path.join(work, "recipes"))
        with open(os.path.join(work, "recipes", "nightly-build.yaml"), "w") as f:
            f.write("name: nightly-build\nsteps:\n  - id: a\n    command: 'true'\n")
        with open(os.path.join(work, "local.yaml"), "w") as f:
            f.write("name: local\nsteps:\n  - id: a\n    command: 'true'\n")
        env = {"PATH": bin_dir + ":/usr/bin:/bin", "HOME": tmp, "ARUN_SESSION_DIR": os.path.join(tmp, "sessions"),
               "XDG_CONFIG_HOME": os.path.join(tmp, "config"), "LANG": "C.UTF-8"}
        with open(os.path.join(work, "broken.yaml"), "w") as f:
            f.write("name: broken\nsteps:\n  - id: greet\n    command: echo hello\n"
                    "  - id: boom\n    command: echo oops >&2; exit 3\n")
        # A program named like an agent CLI on PATH: --agent-cli <TAB> offers it.
        with open(os.path.join(bin_dir, "codex"), "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(os.path.join(bin_dir, "codex"), 0o755)
        r = subprocess.run(["arun", "local.yaml", "-q"], cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        sessions = os.listdir(env["ARUN_SESSION_DIR"]) if r.returncode == 0 else []
        check(len(sessions) == 1, "a session to complete exists", r.stderr.decode())
        session = sessions[0] if sessions else "none"
        # A completed session whose loop had a failed item under on_error: continue: resume
        # --retry-failed has it to run again, so `arun resume <TAB>` offers it.
        with open(os.path.join(work, "soft.yaml"), "w") as f:
            f.write("name: soft\nsteps:\n  - id: fan\n    foreach: [1, 2]\n    on_error: continue\n"
                    "    command: test {{item}} = 1\n")
        r = subprocess.run(["arun", "soft.yaml", "-q"], cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        soft = [s for s in os.listdir(env["ARUN_SESSION_DIR"]) if s != session]
        check(r.returncode == 0 and len(soft) == 1, "a completed session with a failed item exists", r.stderr.decode())
        soft = soft[0] if soft else "none"
        # A failed session: the one `arun resume <TAB>` offers (the completed one has nothing to do).
        r = subprocess.run(["arun", "broken.yaml", "-q"], cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        failed = [s for s in os.listdir(env["ARUN_SESSION_DIR"]) if s not in (session, soft)]
        check(r.returncode == 1 and len(failed) == 1, "a failed session to complete exists", r.stderr.decode())
        failed = failed[0] if failed else "none"
        # The presets not on the test's PATH are not offered when one is.
        absent = [name for name in ("claude", "copilot") if not shutil.which(name, path=env["PATH"])]
        scripts = {}
        for sh in ("bash", "zsh", "fish"):
            out, err = shell(["arun", "completions", sh], env)
            path = os.path.join(tmp, f"arun.{sh}")
            open(path, "w").write(out)
            scripts[sh] = path
            check(out.strip() != "", f"arun completions {sh} prints a script", err)

        # (typed words after `arun`, the last one being completed) -> what must be offered
        cases = [
            (["sess"], ["sessions"], []),
            (["sessions", ""], ["list", "show", "clean"], ["validate"]),
            (["validate", "--out"], ["--output-format"], []),
            (["--color", ""], ["auto", "always", "never"], []),
            (["resume", ""], [failed, soft], [session]),
            (["logs", session[:9]], [session], []),
            (["sessions", "clean", ""], [session, failed], []),
            (["logs", failed, ""], ["greet", "boom"], []),
            (["logs", "last", "gr"], ["greet"], ["boom"]),
            (["logs", failed[-6:], "--stream", "out", ""], ["greet", "boom"], []),
            (["--agent-cli", ""], ["codex"], absent),
            (["validate", "--agent-cli", "co"], ["codex"], absent),
            (["nigh"], ["nightly-build"], []),
            (["completions", ""], ["bash", "zsh", "fish"], []),
            (["--color=al"], ["--color=always"], ["--color=auto"]),
            (["--output-format="], ["--output-format=text", "--output-format=json"], []),
            (["resume", '"' + failed[:9]], [failed], [session]),
            # a word ending in = is not glued to the next one when a blank is between them
            (["--set", "a=", "nigh"], ["nightly-build"], []),
            (["resume", '--session-dir="' + env["ARUN_SESSION_DIR"] + '"', ""], [failed], [session]),
        ]

        def bash_complete(words):
            # COMP_WORDS as bash splits the line: `--color=al` is `--color`, `=`, `al`
            # (COMP_WORDBREAKS), and bash replaces only the part after the `=`.
            tokens = []
            for w in words:
                if "=" in w and not w.startswith(("'", '"')):
                    name, _, value = w.partition("=")
                    tokens += [name, "="] + ([value] if value else [])
                else:
                    tokens.append(w)
            # COMP_LINE is the line as typed; COMP_WORDS as bash split it.
            line = " ".join(["arun", *words])
            q = lambda t: "'" + t.replace("'", "'\\''") + "'"
            quoted = " ".join(q(t) for t in tokens)
            script = (f"source {scripts['bash']}\n"
                      f"COMP_WORDS=(arun {quoted})\nCOMP_LINE={q(line)}\nCOMP_POINT={len(line)}\n"
                      f"COMP_CWORD={len(tokens)}\n_arun\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
            out, err = shell(["bash", "--norc", "--noprofile"], env, script.encode(), cwd=work)
            got = out.split("\n")
            # What bash shows is the line with the part after `=` replaced.
            head = words[-1].rpartition("=")[0] + "=" if words and words[-1].startswith("-") and "=" in words[-1] else ""
            return [head + g if g else g for g in got], err

        def fish_complete(words):
            line = " ".join(["arun", *words])
            line = line.replace("'", "\\'")
            out, err = shell(["fish", "--no-config", "-c", f"source {scripts['fish']}; complete -C '{line}'"], env,
                             cwd=work)
            return [l.split("\t")[0] for l in out.split("\n")], err

        def zsh_complete(words):
            script = (f"_describe() {{ print -rl -- \"${{(@P)${{@[-1]}}}}\" }}\n_files() {{ print -r -- FILES $* }}\n"
                      f"source {scripts['zsh']} 2>/dev/null\n"
                      "words=(arun " + " ".join("'" + w.replace("'", "'\\''") + "'" for w in words) +
                      f")\nCURRENT={len(words) + 1}\n_arun\n")
            out, err = shell(["zsh", "-f"], env, script.encode(), cwd=work)
            return [l.split(":")[0].replace("\\", "") for l in out.split("\n")], err

        for sh, complete in (("bash", bash_complete), ("fish", fish_complete), ("zsh", zsh_complete)):
            for words, wanted, unwanted in cases:
                got, err = complete(words)
                missing = [w for w in wanted if w not in got]
                extra = [w for w in unwanted if w in got]
                check(not missing and not extra, f"{sh}: arun {' '.join(words)}<TAB> offers {wanted}",
                      f"got {got[:20]} missing {missing} unexpected {extra} {err[-300:]}")
        # Files: a recipe argument offers YAML files as well as names.
        got, err = bash_complete(["loc"])
        check("local.yaml" in got, "bash: arun loc<TAB> offers local.yaml", f"got {got} {err}")
        out, err = shell(["zsh", "-n", scripts["zsh"]], env)
        check(err == "", "zsh -n accepts the zsh script", err)
        out, err = shell(["bash", "-n", scripts["bash"]], env)
        check(err == "", "bash -n accepts the bash script", err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    left = processes_with(tmp)
    check(not left, "no process left behind", str(left))
    print(f"{len(failures)} failed" if failures else "completions test passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
