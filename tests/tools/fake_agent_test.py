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
        r = self.run_fake(["-p", "--verbose", "--color=always", "extra"], "t\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[0]["unknown_args"], ["--verbose", "--color=always", "extra"])
        # --output-format and --json are known options, never unknown ones.
        r = self.run_fake(["-p", "--verbose", "--output-format=json", "extra"], "t\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[1]["unknown_args"], ["--verbose", "extra"])
        self.assertEqual(self.calls()[1]["output_format"], "json")

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

    # ---- claude JSON output ----------------------------------------------------------
    def claude_json(self, r):
        """The single JSON object a claude --output-format json call printed."""
        out = r.stdout.decode()
        self.assertTrue(out.endswith("\n"), out)
        self.assertEqual(out.count("\n"), 1, out)  # exactly one line
        return json.loads(out)

    def test_claude_json_object_and_default_usage(self):
        wd = tempfile.mkdtemp(dir=self.state)
        prompt = "Summarise the repo\nFAKE: reply hello world, this is the reply\n"
        r = self.run_fake(["-p", "--output-format", "json", "--add-dir", wd], prompt)
        self.assertEqual(r.returncode, 0, r.stderr)
        obj = self.claude_json(r)
        self.assertEqual(list(obj), ["type", "subtype", "is_error", "duration_ms", "duration_api_ms",
                                     "num_turns", "result", "session_id", "total_cost_usd", "usage",
                                     "modelUsage"])
        self.assertEqual((obj["type"], obj["subtype"], obj["is_error"], obj["num_turns"]),
                         ("result", "success", False, 1))
        self.assertIsInstance(obj["duration_ms"], int)
        self.assertIsInstance(obj["duration_api_ms"], int)
        self.assertRegex(obj["session_id"], r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
        # The result is the text reply exactly (without the newline that ends the text output).
        text = self.run_fake(["-p"], prompt)
        self.assertEqual(obj["result"] + "\n", text.stdout.decode())
        inp = len(prompt.encode()) // 4
        out = len(obj["result"].encode()) // 4
        self.assertEqual(obj["usage"], {"input_tokens": inp, "cache_creation_input_tokens": 0,
                                        "cache_read_input_tokens": 0, "output_tokens": out})
        cost = inp * 3e-6 + out * 15e-6
        self.assertAlmostEqual(obj["total_cost_usd"], cost, places=12)
        self.assertEqual(list(obj["modelUsage"]), ["fake-model"])
        mu = obj["modelUsage"]["fake-model"]
        self.assertEqual(mu, {"inputTokens": inp, "outputTokens": out, "cacheReadInputTokens": 0,
                              "cacheCreationInputTokens": 0, "costUSD": obj["total_cost_usd"]})
        c = self.calls()[0]
        self.assertEqual((c["shape"], c["provider"], c["output_mode"], c["output_format"]),
                         ("claude", "claude", "claude-json", "json"))
        self.assertEqual(c["add_dir"], [wd])
        self.assertEqual(c["unknown_args"], [])
        self.assertEqual(c["usage"], obj["usage"])
        self.assertEqual(c["total_cost_usd"], obj["total_cost_usd"])
        self.assertEqual(c["reported_model"], "fake-model")
        self.assertEqual(c["session_id"], obj["session_id"])
        self.assertIsNone(self.calls()[1]["usage"])  # text mode reports nothing

    def test_claude_json_forms_and_model(self):
        # The default reply, `=` form, the amplihack launcher, the --model value and a tiny
        # prompt (at least one token each way).
        r = self.run_fake(["claude", "--", "-p", "--output-format=json", "--model", "sonnet",
                           "--append-system-prompt", "Be terse."], "Hi\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        obj = self.claude_json(r)
        self.assertEqual(obj["result"], "fake-agent: Hi\nSTATUS: COMPLETE")
        self.assertEqual(list(obj["modelUsage"]), ["sonnet"])
        self.assertEqual(obj["usage"]["input_tokens"], 1)
        r = self.run_fake(["-p", "--output-format", "json"], "")
        self.assertEqual(self.claude_json(r)["usage"]["input_tokens"], 1)
        c = self.calls()[0]
        self.assertEqual((c["launcher"], c["shape"], c["output_mode"], c["system_prompt"]),
                         ("claude", "claude", "claude-json", "Be terse."))
        # --output-format text (or anything but json) keeps the text output.
        r = self.run_fake(["-p", "--output-format", "text"], "t\nFAKE: reply plain\n")
        self.assertEqual(r.stdout, b"plain\n")

    def test_usage_cost_and_model_directives(self):
        base = ["-p", "--output-format", "json", "--model", "sonnet"]
        obj = self.claude_json(self.run_fake(base, "t\nFAKE: usage 1000 200 300 40\nFAKE: cost 0.5\n"
                                                   "FAKE: model claude-opus-4\n"))
        self.assertEqual(obj["usage"], {"input_tokens": 1000, "cache_creation_input_tokens": 40,
                                        "cache_read_input_tokens": 300, "output_tokens": 200})
        self.assertEqual(obj["total_cost_usd"], 0.5)
        self.assertEqual(obj["modelUsage"], {"claude-opus-4": {
            "inputTokens": 1000, "outputTokens": 200, "cacheReadInputTokens": 300,
            "cacheCreationInputTokens": 40, "costUSD": 0.5}})
        # Without `cost` the fake price applies, cache tokens included.
        obj = self.claude_json(self.run_fake(base, "t\nFAKE: usage 1000000 1000000 1000000 1000000\n"))
        self.assertAlmostEqual(obj["total_cost_usd"], 3 + 15 + 0.30 + 3.75, places=9)
        obj = self.claude_json(self.run_fake(base, "t\nFAKE: usage 7 3\n"))
        self.assertEqual(obj["usage"], {"input_tokens": 7, "cache_creation_input_tokens": 0,
                                        "cache_read_input_tokens": 0, "output_tokens": 3})
        # no-cost: neither total_cost_usd nor costUSD, even with `cost`.
        obj = self.claude_json(self.run_fake(base, "t\nFAKE: cost 1\nFAKE: no-cost\nFAKE: usage 5 6\n"))
        self.assertNotIn("total_cost_usd", obj)
        self.assertEqual(obj["modelUsage"], {"sonnet": {"inputTokens": 5, "outputTokens": 6,
                                                        "cacheReadInputTokens": 0,
                                                        "cacheCreationInputTokens": 0}})
        self.assertIsNone(self.calls()[-1]["total_cost_usd"])
        # Malformed usage directives are ignored (and recorded) like other bad directives.
        r = self.run_fake(base, "t\nFAKE: usage 5\nFAKE: usage -1 2\nFAKE: cost x\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[-1]["unknown_directives"], ["usage 5", "usage -1 2", "cost x"])
        # Text mode shows none of it.
        r = self.run_fake(["-p"], "t\nFAKE: usage 5 6\nFAKE: cost 1\nFAKE: model m\nFAKE: reply ok\n")
        self.assertEqual(r.stdout, b"ok\n")
        self.assertEqual(self.calls()[-1]["unknown_directives"], [])

    def test_claude_json_scripted_failure(self):
        r = self.run_fake(["-p", "--output-format", "json"], "t\nFAKE: reply partial\nFAKE: exit 3 it broke\n")
        self.assertEqual(r.returncode, 3)
        obj = self.claude_json(r)
        self.assertEqual((obj["subtype"], obj["is_error"], obj["result"]),
                         ("error_during_execution", True, "it broke"))
        self.assertIn(b"it broke", r.stderr)
        r = self.run_fake(["-p", "--output-format", "json"], "t\nFAKE: exit 4\n")
        self.assertEqual(r.returncode, 4)
        self.assertEqual(self.claude_json(r)["result"], "fake-agent: exiting with status 4")

    def test_claude_json_rate_limit(self):
        zeros = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 "output_tokens": 0}
        result = ('API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":'
                  '"This request would exceed your account\'s rate limit. Please try again later."}}')
        # Default: the is_error object on stdout, 429 on stderr, exit 1.
        prompt = "k1\nFAKE: rate-limit 1\nFAKE: reply fine\nFAKE: usage 9 9\n"
        r = self.run_fake(["-p", "--output-format", "json"], prompt)
        self.assertEqual(r.returncode, 1)
        self.assertIn(RATE_LIMIT_MESSAGE, r.stderr.decode())
        obj = self.claude_json(r)
        self.assertEqual((obj["subtype"], obj["is_error"], obj["api_error_status"], obj["result"]),
                         ("success", True, 429, result))
        self.assertEqual(obj["usage"], zeros)
        self.assertEqual(obj["total_cost_usd"], 0)
        self.assertEqual(obj["modelUsage"], {})
        r = self.run_fake(["-p", "--output-format", "json"], prompt)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.claude_json(r)["result"], "fine")
        # rate-limit-exit0: the same object, nothing on stderr, exit 0.
        prompt = "k2\nFAKE: rate-limit 1\nFAKE: rate-limit-exit0\nFAKE: reply fine\n"
        r = self.run_fake(["-p", "--output-format", "json"], prompt)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, b"")
        obj = self.claude_json(r)
        self.assertEqual((obj["subtype"], obj["is_error"], obj["api_error_status"], obj["result"]),
                         ("success", True, 429, result))
        self.assertEqual(obj["usage"], zeros)
        self.assertEqual(self.claude_json(self.run_fake(["-p", "--output-format", "json"], prompt))["result"],
                         "fine")
        c = self.calls()
        self.assertEqual([(x["rate_limited"], x["rate_limit_reason"], x["exit_code"]) for x in c],
                         [(True, "rate-limit", 1), (False, None, 0), (True, "rate-limit", 0),
                          (False, None, 0)])
        # In text mode rate-limit-exit0 changes nothing.
        r = self.run_fake(["-p"], "k3\nFAKE: rate-limit 1\nFAKE: rate-limit-exit0\n")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, b"")
        self.assertIn(RATE_LIMIT_MESSAGE, r.stderr.decode())

    # ---- codex JSON events -----------------------------------------------------------
    def codex_events(self, r):
        lines = r.stdout.decode().splitlines()
        events = [json.loads(l) for l in lines]
        self.assertEqual(events[0]["type"], "thread.started")
        self.assertRegex(events[0]["thread_id"], r"^[0-9a-f-]{36}$")
        self.assertEqual(events[1], {"type": "turn.started"})
        return events

    def test_codex_json_events_and_usage(self):
        prompt = "# Instructions\nPersona\n# Task\nFix the bug\nFAKE: reply fixed it\n"
        r = self.run_fake(["exec", "--json", "--model", "o3", "-"], prompt)
        self.assertEqual(r.returncode, 0, r.stderr)
        ev = self.codex_events(r)
        self.assertEqual(ev[2:], [
            {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Thinking**"}},
            {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "fixed it"}},
            {"type": "turn.completed", "usage": {"input_tokens": len(prompt.encode()) // 4,
                                                 "cached_input_tokens": 0,
                                                 "output_tokens": max(1, len("fixed it") // 4)}}])
        c = self.calls()[0]
        self.assertEqual((c["shape"], c["provider"], c["output_mode"], c["json_flag"], c["model"]),
                         ("codex", "codex", "codex-jsonl", True, "o3"))
        self.assertEqual(c["unknown_args"], [])
        self.assertEqual(c["session_id"], ev[0]["thread_id"])
        # usage: codex counts the cached tokens (and the cache writes) inside input_tokens.
        r = self.run_fake(["codex", "--", "exec", "--json", "-"],
                          "t\nFAKE: usage 100 20 30 5\nFAKE: cost 9\nFAKE: reply-json {\"a\": 1}\n")
        ev = self.codex_events(r)
        self.assertEqual(ev[3]["item"]["text"], '{"a": 1}')
        self.assertEqual(ev[-1], {"type": "turn.completed",
                                  "usage": {"input_tokens": 135, "cached_input_tokens": 30, "output_tokens": 20}})
        self.assertEqual(self.calls()[1]["usage"], ev[-1]["usage"])
        self.assertIsNone(self.calls()[1]["total_cost_usd"])
        # Without --json the codex shape prints text.
        r = self.run_fake(["exec", "-"], "t\nFAKE: reply text\n")
        self.assertEqual(r.stdout, b"text\n")

    def test_codex_json_failure_and_rate_limit(self):
        r = self.run_fake(["exec", "--json", "-"], "t\nFAKE: reply half\nFAKE: exit 2 tool crashed\n")
        self.assertEqual(r.returncode, 2)
        ev = self.codex_events(r)
        self.assertEqual(ev[3]["item"]["text"], "half")
        self.assertEqual(ev[-1], {"type": "turn.failed", "error": {"message": "tool crashed"}})
        self.assertIn(b"tool crashed", r.stderr)
        msg = "exceeded retry limit, last status: 429 Too Many Requests"
        r = self.run_fake(["exec", "--json", "-"], "t\nFAKE: rate-limit 1\n")
        self.assertEqual(r.returncode, 1)
        ev = self.codex_events(r)
        self.assertEqual(ev[2:], [{"type": "error", "message": msg},
                                  {"type": "turn.failed", "error": {"message": msg}}])
        self.assertEqual(self.calls()[-1]["rate_limit_reason"], "rate-limit")

    # ---- per-provider rate limits ----------------------------------------------------
    def start_fake(self, args, prompt, env=None):
        e = dict(self.env)
        e.update(env or {})
        p = subprocess.Popen([FAKE] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=e)
        self.addCleanup(kill_quietly, p)
        p.stdin.write(prompt.encode())
        p.stdin.close()
        p.stdin = None  # communicate() must not touch it again
        return p

    def running_dir(self, provider):
        return os.path.join(self.state, "providers", provider, "running")

    def test_provider_limit_limits_concurrent_calls(self):
        # Four calls start together; the two admitted ones sleep until this test ends them,
        # so the outcome does not depend on how fast the machine starts processes.
        prompt = "work\nFAKE: provider-limit 2\nFAKE: sleep 30\nFAKE: reply done\n"
        procs = [self.start_fake(["-p"], prompt) for _ in range(4)]
        # Other providers have their own count: a codex call and a claude-shaped call that
        # $FAKE_AGENT_PROVIDER puts elsewhere.
        quick = "work\nFAKE: provider-limit 1\nFAKE: reply done\n"
        others = [self.start_fake(["exec", "-"], quick),
                  self.start_fake(["-p"], quick, env={"FAKE_AGENT_PROVIDER": "team-b"})]
        try:
            # Each call writes one stderr line once it is past the check: 429 or "sleeping".
            first = [p.stderr.readline().decode() for p in procs]
            sleeping = [p for p, line in zip(procs, first) if "sleeping" in line]
            limited = [p for p, line in zip(procs, first) if RATE_LIMIT_MESSAGE in line]
            self.assertEqual((len(sleeping), len(limited)), (2, 2), first)
            for p in limited:
                out, _ = p.communicate(timeout=30)
                self.assertEqual((p.returncode, out), (1, b""))
            self.assertEqual([p.poll() for p in sleeping], [None, None])
            self.assertEqual(len(os.listdir(self.running_dir("claude"))), 2)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs + others:
                p.communicate(timeout=30)
        self.assertEqual(sorted(p.returncode for p in procs), [1, 1, 143, 143])
        self.assertEqual([p.returncode for p in others], [0, 0])
        calls = self.calls()
        claude = [c for c in calls if c["provider"] == "claude"]
        self.assertEqual(len(claude), 4)
        admitted = [c for c in claude if not c["rate_limited"]]
        limited = [c for c in claude if c["rate_limited"]]
        self.assertEqual(sorted(c["concurrent"] for c in admitted), [1, 2])
        self.assertEqual([c["concurrent"] for c in limited], [3, 3])
        self.assertEqual({c["rate_limit_reason"] for c in limited}, {"provider-limit"})
        self.assertEqual(max(c["concurrent"] for c in claude), 3)
        by_provider = {c["provider"]: c for c in calls if c["provider"] != "claude"}
        self.assertEqual(set(by_provider), {"codex", "team-b"})
        self.assertEqual(by_provider["codex"]["concurrent"], 1)
        self.assertEqual(by_provider["team-b"]["shape"], "claude")
        self.assertEqual(by_provider["team-b"]["concurrent"], 1)
        # Every call dropped its registration when it ended.
        for provider in ("claude", "codex", "team-b"):
            self.assertEqual(os.listdir(self.running_dir(provider)), [])

    def test_provider_limit_admits_again_after_calls_end(self):
        prompt = "seq\nFAKE: provider-limit 1\nFAKE: reply ok\n"
        r = [self.run_fake(["-p"], prompt) for _ in range(3)]
        self.assertEqual([x.returncode for x in r], [0, 0, 0])
        self.assertEqual([c["concurrent"] for c in self.calls()], [1, 1, 1])
        self.assertEqual([c["rate_limited"] for c in self.calls()], [False, False, False])
        # provider-limit 0 limits every call, in the claude JSON shape too.
        r = self.run_fake(["-p", "--output-format", "json"], "t\nFAKE: provider-limit 0\n")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(self.claude_json(r)["api_error_status"], 429)

    def test_provider_limit_codex_json_shape(self):
        # A provider-limited codex --json call fails with codex's rate-limit events.
        os.makedirs(self.running_dir("codex"))
        with open(os.path.join(self.running_dir("codex"), str(os.getpid())), "w") as f:
            f.write(proc_start_time(os.getpid()))  # this test process counts as a running call
        r = self.run_fake(["exec", "--json", "-"], "t\nFAKE: provider-limit 1\n")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(self.codex_events(r)[2]["type"], "error")
        c = self.calls()[0]
        self.assertEqual((c["concurrent"], c["rate_limited"], c["rate_limit_reason"]),
                         (2, True, "provider-limit"))
        r = self.run_fake(["exec", "--json", "-"], "t\nFAKE: provider-limit 2\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[1]["concurrent"], 2)
        # The same pid with another start time is a reused pid: stale, not counted.
        with open(os.path.join(self.running_dir("codex"), str(os.getpid())), "w") as f:
            f.write("1")
        r = self.run_fake(["exec", "--json", "-"], "t\nFAKE: provider-limit 1\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[2]["concurrent"], 1)

    def test_killed_call_registration_is_ignored(self):
        p = subprocess.Popen([FAKE, "-p"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=self.env)
        p.stdin.write(b"t\nFAKE: sleep 30\n")
        p.stdin.close()
        p.stderr.readline()  # "fake-agent: pid P sleeping ..."
        registration = os.path.join(self.running_dir("claude"), str(p.pid))
        self.assertTrue(os.path.exists(registration))
        # While it runs it counts ...
        r = self.run_fake(["-p"], "t\nFAKE: provider-limit 1\n")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(self.calls()[0]["concurrent"], 2)
        p.kill()
        p.wait(timeout=10)
        p.stderr.close()
        self.assertTrue(os.path.exists(registration))  # SIGKILL leaves the file behind
        # ... once killed it does not, and its file is cleared away.
        r = self.run_fake(["-p"], "t\nFAKE: provider-limit 1\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        c = self.calls()[1]
        self.assertEqual((c["concurrent"], c["rate_limited"]), (1, False))
        self.assertFalse(os.path.exists(registration))

    def test_sigterm_drops_the_registration(self):
        p = subprocess.Popen([FAKE, "-p"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=self.env)
        p.stdin.write(b"t\nFAKE: sleep 30\n")
        p.stdin.close()
        p.stderr.readline()
        self.assertEqual(os.listdir(self.running_dir("claude")), [str(p.pid)])
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=10), 143)
        p.stderr.close()
        self.assertEqual(os.listdir(self.running_dir("claude")), [])

    def test_rate_limit_window(self):
        prompt = "w\nFAKE: rate-limit-window 60 2\nFAKE: reply ok\n"
        r = [self.run_fake(["-p"], prompt) for _ in range(3)]
        self.assertEqual([x.returncode for x in r], [0, 0, 1], [x.stderr for x in r])
        self.assertIn(RATE_LIMIT_MESSAGE, r[2].stderr.decode())
        calls = self.calls()
        self.assertEqual([c["window_starts"] for c in calls], [1, 2, 2])
        self.assertEqual([c["rate_limited"] for c in calls], [False, False, True])
        self.assertEqual([c["rate_limit_reason"] for c in calls], [None, None, "rate-limit-window"])
        # Other providers have their own window.
        r = self.run_fake(["exec", "-"], prompt)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[-1]["window_starts"], 1)
        # The window slides: once a start is older than SECONDS it no longer counts.
        slide = {"FAKE_AGENT_PROVIDER": "slide"}
        prompt = "w\nFAKE: rate-limit-window 0.5 1\n"
        r = self.run_fake(["-p", "--output-format", "json"], prompt, env=slide)
        self.assertEqual(r.returncode, 0, r.stderr)
        time.sleep(max(0.0, self.calls()[-1]["end"] + 0.55 - time.time()))
        r = self.run_fake(["-p", "--output-format", "json"], prompt, env=slide)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(self.claude_json(r)["is_error"])
        c = self.calls()[-1]
        self.assertEqual((c["provider"], c["window_starts"], c["rate_limited"]), ("slide", 1, False))

    # ---- schema failures -------------------------------------------------------------
    def test_schema_fail_then_scripted_reply(self):
        prompt = 'Plan it\nFAKE: schema-fail 2\nFAKE: reply-json {"steps": ["a"]}\n'
        r1 = self.run_fake(["-p"], prompt)
        self.assertEqual(r1.returncode, 0, r1.stderr)
        self.assertEqual(r1.stdout, b'{"unexpected": "schema-fail attempt 1"}\n')
        correction = prompt + "\nYour previous reply did not match the schema: 'steps' is required\n"
        r2 = self.run_fake(["-p", "--output-format", "json"], correction)
        self.assertEqual(json.loads(self.claude_json(r2)["result"]), {"unexpected": "schema-fail attempt 2"})
        r3 = self.run_fake(["-p"], prompt)
        self.assertEqual(json.loads(r3.stdout), {"steps": ["a"]})
        calls = self.calls()
        self.assertEqual([c.get("schema_fail_call") for c in calls], [1, 2, 3])
        self.assertEqual(calls[1]["stdin"], correction)  # the validator's words are recorded
        # With bad-json: first the bad JSON, then the schema failures, then the reply.
        prompt = 'Other\nFAKE: bad-json 1\nFAKE: schema-fail 1\nFAKE: reply-json {"ok": 1}\n'
        outs = [self.run_fake(["-p"], prompt).stdout for _ in range(3)]
        with self.assertRaises(ValueError):
            json.loads(outs[0])
        self.assertEqual(json.loads(outs[1]), {"unexpected": "schema-fail attempt 1"})
        self.assertEqual(json.loads(outs[2]), {"ok": 1})

    def test_write_edits_files_in_the_working_directory(self):
        work = os.path.join(self.state, "checkout")
        os.makedirs(work)
        prompt = "Edit it\nFAKE: write notes/a.txt first line\nFAKE: write b.txt two words\n"
        r = self.run_fake(["-p"], prompt, cwd=work)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(work, "notes", "a.txt")) as f:
            self.assertEqual(f.read(), "first line\n")
        with open(os.path.join(work, "b.txt")) as f:
            self.assertEqual(f.read(), "two words\n")
        self.assertEqual(self.calls()[0]["wrote"], [os.path.join(work, "notes", "a.txt"), os.path.join(work, "b.txt")])


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


def kill_quietly(p):
    if p.poll() is None:
        p.kill()
    p.wait()
    for f in (p.stdout, p.stderr):
        if f:
            f.close()


def proc_start_time(pid):
    """The start time of process PID in clock ticks since boot, as /proc/PID/stat has it."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake", required=True, help="path of tools/fake-agent")
    ns, rest = ap.parse_known_args()
    FAKE = os.path.abspath(ns.fake)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
