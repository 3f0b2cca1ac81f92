#!/usr/bin/env python3
"""Tests of tools/fake-agent: directives, argv shapes, call records, counters, signals.

Run: python3 tests/tools/fake_agent_test.py --fake tools/fake-agent
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

FAKE = None
RATE_LIMIT_MESSAGE = "Error: 429 Too Many Requests - you have hit your rate limit"


class FakeAgentTest(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="fake-agent-test-")
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith(("ARUN_", "AMPLIHACK_", "FAKE_AGENT_")) or k in ("CLAUDECODE", "NONINTERACTIVE"):
                del self.env[k]
        self.env["FAKE_AGENT_STATE"] = self.state

    def tearDown(self):
        shutil.rmtree(self.state, ignore_errors=True)

    def run_fake(self, args, prompt="", env=None, timeout=30, cwd=None):
        e = dict(self.env)
        e.update(env or {})
        data = prompt if isinstance(prompt, bytes) else prompt.encode()
        return subprocess.run([FAKE] + args, input=data, capture_output=True, env=e,
                              timeout=timeout, cwd=cwd)

    def calls(self):
        path = os.path.join(self.state, "calls.jsonl")
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    # ---- replies ---------------------------------------------------------------------
    def test_default_reply(self):
        r = self.run_fake(["-p"], "Summarise the repo\nmore text\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode(), "fake-agent: Summarise the repo\nSTATUS: COMPLETE\n")

    def test_reply_text(self):
        r = self.run_fake(["-p"], "task\nFAKE: reply hello world\nFAKE: reply second\n")
        self.assertEqual(r.stdout.decode(), "hello world\nsecond\n")

    def test_reply_json(self):
        r = self.run_fake(["-p"], 'task\nFAKE: reply-json {"ok": true, "n": [1, 2]}\n')
        self.assertEqual(r.returncode, 0)
        self.assertEqual(json.loads(r.stdout), {"ok": True, "n": [1, 2]})
        self.assertEqual(r.stdout.decode(), '{"ok": true, "n": [1, 2]}\n')

    def test_reply_fenced(self):
        r = self.run_fake(["-p"], 'task\nFAKE: reply-fenced {"x": "y"}\n')
        out = r.stdout.decode()
        before, rest = out.split("```json\n", 1)
        body, after = rest.split("\n```", 1)
        self.assertTrue(before.strip())
        self.assertTrue(after.strip())
        self.assertEqual(json.loads(body), {"x": "y"})
        with self.assertRaises(ValueError):
            json.loads(out)

    def test_echo_env(self):
        r = self.run_fake(["-p"], "t\nFAKE: echo-env FOO_X\nFAKE: echo-env NOT_SET_X\n",
                          env={"FOO_X": "bar baz"})
        self.assertEqual(r.stdout.decode(), "FOO_X=bar baz\nNOT_SET_X unset\n")

    def test_sleep(self):
        t = time.monotonic()
        r = self.run_fake(["-p"], "t\nFAKE: sleep 0.5\n")
        self.assertGreaterEqual(time.monotonic() - t, 0.5)
        self.assertEqual(r.returncode, 0)
        c = self.calls()[0]
        self.assertGreaterEqual(c["end"] - c["start"], 0.5)

    def test_exit(self):
        r = self.run_fake(["-p"], "t\nFAKE: exit 7\n")
        self.assertEqual(r.returncode, 7)
        self.assertIn(b"7", r.stderr)
        r = self.run_fake(["-p"], "t\nFAKE: exit 3 something broke\nFAKE: reply partial\n")
        self.assertEqual(r.returncode, 3)
        self.assertIn(b"something broke", r.stderr)
        self.assertEqual(r.stdout, b"partial\n")
        self.assertEqual([c["exit_code"] for c in self.calls()], [7, 3])

    def test_unknown_directive_is_not_fatal(self):
        r = self.run_fake(["-p"], "t\nFAKE: frobnicate 3\nFAKE: reply ok\n")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, b"ok\n")
        self.assertEqual(self.calls()[0]["unknown_directives"], ["frobnicate 3"])

    # ---- counters --------------------------------------------------------------------
    def test_rate_limit_counts_per_key(self):
        prompt = "Review the diff\nFAKE: rate-limit 2\nFAKE: reply done\n"
        codes = []
        for _ in range(3):
            r = self.run_fake(["-p"], prompt)
            codes.append(r.returncode)
            if r.returncode == 1:
                self.assertIn(RATE_LIMIT_MESSAGE, r.stderr.decode())
                self.assertEqual(r.stdout, b"")
            else:
                self.assertEqual(r.stdout, b"done\n")
        self.assertEqual(codes, [1, 1, 0])
        # Another first line is another key; FAKE: key overrides the first line.
        self.assertEqual(self.run_fake(["-p"], "Other\nFAKE: rate-limit 1\n").returncode, 1)
        a = "A\nFAKE: key shared\nFAKE: rate-limit 1\n"
        b = "B\nFAKE: key shared\nFAKE: rate-limit 1\n"
        self.assertEqual(self.run_fake(["-p"], a).returncode, 1)
        self.assertEqual(self.run_fake(["-p"], b).returncode, 0)
        self.assertEqual([c["exit_code"] for c in self.calls()], [1, 1, 0, 1, 1, 0])

    def test_bad_json(self):
        prompt = 'make json\nFAKE: bad-json 1\nFAKE: reply-json {"a": 1}\n'
        r1 = self.run_fake(["-p"], prompt)
        self.assertEqual(r1.returncode, 0)
        with self.assertRaises(ValueError):
            json.loads(r1.stdout)
        r2 = self.run_fake(["-p"], prompt)
        self.assertEqual(json.loads(r2.stdout), {"a": 1})

    def test_rate_limit_then_bad_json(self):
        prompt = 'k\nFAKE: rate-limit 1\nFAKE: bad-json 1\nFAKE: reply-json [1]\n'
        r = [self.run_fake(["-p"], prompt) for _ in range(3)]
        self.assertEqual([x.returncode for x in r], [1, 0, 0])
        with self.assertRaises(ValueError):
            json.loads(r[1].stdout)
        self.assertEqual(json.loads(r[2].stdout), [1])

    # ---- argv shapes -----------------------------------------------------------------
    def test_claude_shape(self):
        wd = tempfile.mkdtemp(dir=self.state)
        r = self.run_fake(["-p", "--add-dir", wd, "--model", "sonnet",
                           "--append-system-prompt", "You are terse."], "Do X\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        c = self.calls()[0]
        self.assertEqual(c["shape"], "claude")
        self.assertEqual(c["add_dir"], [wd])
        self.assertEqual(c["model"], "sonnet")
        self.assertEqual(c["system_prompt"], "You are terse.")
        self.assertEqual(c["prompt_source"], "stdin")
        self.assertEqual(c["stdin"], "Do X\n")

    def test_copilot_shape_with_instructions_header(self):
        prompt = "# Instructions\nYou review code.\nBe kind.\n\n# Task\nReview it\nFAKE: reply ok\n"
        r = self.run_fake(["-p", prompt, "--allow-all-tools", "--model", "gpt-5"], "ignored stdin")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"ok\n")
        c = self.calls()[0]
        self.assertEqual(c["shape"], "copilot")
        self.assertTrue(c["allow_all_tools"])
        self.assertEqual(c["model"], "gpt-5")
        self.assertEqual(c["prompt_source"], "argv")
        self.assertEqual(c["stdin"], prompt)
        self.assertEqual(c["system_prompt"], "You review code.\nBe kind.")
        self.assertEqual(c["key"], "Review it")

    def test_codex_shape(self):
        r = self.run_fake(["exec", "--model", "o3", "-"], "# Instructions\nPersona\n# Task\nFix bug\n")
        self.assertEqual(r.stdout.decode(), "fake-agent: Fix bug\nSTATUS: COMPLETE\n")
        c = self.calls()[0]
        self.assertEqual(c["shape"], "codex")
        self.assertEqual(c["model"], "o3")
        self.assertEqual(c["system_prompt"], "Persona")

    def test_amplihack_launcher_form(self):
        r = self.run_fake(["codex", "--", "exec", "--model", "m", "-"], "task\nFAKE: reply ok\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode(), "ok\n")
        c = self.calls()[0]
        self.assertEqual(c["launcher"], "codex")
        self.assertEqual(c["shape"], "codex")
        self.assertEqual(c["model"], "m")
        self.assertEqual(c["unknown_args"], [])

    def test_copilot_prompt_pointer_is_followed(self):
        prompt_file = os.path.join(self.state, "prompt.md")
        with open(prompt_file, "w") as f:
            f.write("# Instructions\n\nBe brief.\n\n# Task\n\nbig task\nFAKE: reply from file\n")
        pointer = "Read the file " + prompt_file + " first: it holds your complete instructions and task. Then carry them out."
        r = self.run_fake(["-p", pointer, "--allow-all-tools"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode(), "from file\n")
        c = self.calls()[0]
        self.assertEqual(c["prompt_source"], "argv-file")
        self.assertEqual(c["system_prompt"], "Be brief.")

    def test_unknown_args_are_recorded(self):
        r = self.run_fake(["-p", "--verbose", "--output-format=json", "extra"], "t\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[0]["unknown_args"], ["--verbose", "--output-format=json", "extra"])

    # ---- recording -------------------------------------------------------------------
    def test_record_fields_and_env_filter(self):
        r = self.run_fake(["-p"], "t\n", cwd=self.state, env={
            "CLAUDECODE": "1", "AMPLIHACK_SESSION_DEPTH": "2", "NONINTERACTIVE": "1",
            "ARUN_X": "y", "MY_EXTRA": "e", "SECRET_TOKEN": "no",
            "FAKE_AGENT_RECORD_ENV": "MY_EXTRA,NOT_THERE"})
        self.assertEqual(r.returncode, 0)
        c = self.calls()[0]
        for k in ("argv", "stdin", "env", "cwd", "pid", "pgid", "start", "end", "exit_code",
                  "system_prompt", "stdin_length", "stdin_sha256"):
            self.assertIn(k, c)
        self.assertEqual(c["env"], {"AMPLIHACK_SESSION_DEPTH": "2", "ARUN_X": "y",
                                    "CLAUDECODE": "1", "MY_EXTRA": "e", "NONINTERACTIVE": "1"})
        self.assertEqual(os.path.realpath(c["cwd"]), os.path.realpath(self.state))
        self.assertEqual(c["argv"][1:], ["-p"])
        self.assertIsNone(c["system_prompt"])
        self.assertLessEqual(c["start"], c["end"])
        self.assertEqual(c["exit_code"], 0)

    def test_no_state_dir_records_nothing(self):
        r = self.run_fake(["-p"], "t\n", env={"FAKE_AGENT_STATE": ""})
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.calls(), [])

    def test_state_dir_is_created(self):
        sub = os.path.join(self.state, "a", "b")
        self.run_fake(["-p"], "t\n", env={"FAKE_AGENT_STATE": sub})
        self.assertTrue(os.path.exists(os.path.join(sub, "calls.jsonl")))

    def test_concurrent_calls_record_whole_lines(self):
        body = "x" * 30000  # long lines make interleaving visible if writes were split

        def one(i):
            return self.run_fake(["-p"], f"call {i}\n{body}\nFAKE: sleep 0.1\n").returncode

        with ThreadPoolExecutor(max_workers=20) as ex:
            codes = list(ex.map(one, range(20)))
        self.assertEqual(codes, [0] * 20)
        calls = self.calls()
        self.assertEqual(len(calls), 20)
        self.assertEqual(sorted(c["key"] for c in calls), sorted(f"call {i}" for i in range(20)))
        self.assertEqual(len({c["pid"] for c in calls}), 20)

    def test_huge_prompt(self):
        big = ("first line\n" + ("y" * 1023 + "\n") * (5 * 1024) + "FAKE: reply big ok\n").encode()
        self.assertGreater(len(big), 5 * 1024 * 1024)
        t = time.monotonic()
        r = self.run_fake(["-p"], big)
        elapsed = time.monotonic() - t
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"big ok\n")
        self.assertLess(elapsed, 10)  # generous: this is a hang check, not a benchmark
        c = self.calls()[0]
        self.assertTrue(c["stdin_truncated"])
        self.assertEqual(c["stdin_length"], len(big))
        self.assertEqual(c["stdin_sha256"], hashlib.sha256(big).hexdigest())
        self.assertEqual(c["stdin"], big[:200].decode())

    # ---- signals and process groups --------------------------------------------------
    def test_sigterm_without_ignore_term_is_recorded(self):
        p = subprocess.Popen([FAKE, "-p"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=self.env, start_new_session=True)
        p.stdin.write(b"t\nFAKE: sleep 30\n")
        p.stdin.close()
        p.stderr.readline()  # "fake-agent: pid P sleeping ..."
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=10), 143)
        p.stdout.close()
        p.stderr.close()
        c = self.calls()[0]
        self.assertEqual(c["exit_code"], 143)
        self.assertEqual(c["signal"], "SIGTERM")

    def test_ignore_term_and_grandchild_die_with_the_group(self):
        p = subprocess.Popen([FAKE, "-p"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=self.env, start_new_session=True)
        pgid = p.pid
        try:
            p.stdin.write(b"t\nFAKE: spawn-grandchild\nFAKE: ignore-term\nFAKE: sleep 60\n")
            p.stdin.close()
            line = p.stderr.readline().decode()
            self.assertIn("sleeping", line)
            members = group_members(pgid)
            self.assertGreaterEqual(len(members), 2, members)  # the agent and its grandchild
            os.kill(p.pid, signal.SIGTERM)
            time.sleep(0.5)
            self.assertIsNone(p.poll(), "SIGTERM should be ignored while sleeping")
        finally:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)
            p.stderr.close()
        deadline = time.monotonic() + 10
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(group_members(pgid), [])


def group_members(pgid):
    """Live (non-zombie) processes whose process group is PGID."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(d))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake", required=True, help="path of tools/fake-agent")
    ns, rest = ap.parse_known_args()
    FAKE = os.path.abspath(ns.fake)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
