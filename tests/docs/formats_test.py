#!/usr/bin/env python3
"""arun's JSON output matches the JSON Schemas published in schema/.

Runs recipes that between them produce every event kind, every step type in events, every
step and run status, and every shape of the run result (success, failure, skipped and not-run
steps, foreach with cancelled and never-started iterations, parallel groups, sub-recipes,
agent steps through `--agent-cli fake`, retries, heartbeats, timeouts, approval gates, resume
and `--reload`, an interrupted run), then:

  (a) validates every event line (the --events file, the session's events.jsonl, the
      --audit-dir file) against schema/event.schema.json, every run result against
      schema/result.schema.json, and the documents of --dry-run, validate, explain, list,
      agents list, sessions list/show and config against their schemas;
  (b) checks that what the C++ code can emit is what the schemas allow: the event kinds
      (include/arun/events.hpp and their names in src/engine/names.cpp), the step and run
      statuses, the dry-run verdicts and the diagnostic codes — a new one without a schema
      fails here, and so does a schema value the code no longer emits;
  (c) checks coverage: every event kind, event step type, step status and run status was
      seen in this run's output;
  (d) checks that the schemas stay closed: each captured document with an unknown key added
      must be refused;
  (e) checks each command's exit code, and that no process started by a recipe outlives its
      run (every step runs in the test's temporary directory).

Nothing is written outside a temporary directory (sessions, config, state and HOME point
into it). Prints one line per failure and a closing summary; exits 1 on any failure.
"""

import argparse
import copy
import json
import math
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import jsonschema

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return ok


# ---- recipes ---------------------------------------------------------------------------------

RECIPES = {
    "spilled.yaml": """
name: spilled
steps:
  - id: big
    output: blob
    command: head -c 3000 /dev/zero | tr '\\0' b
""",
    "fleet.yaml": """
name: fleet
limits: {fake: 4}
steps:
  - id: ask
    foreach: [1, 2, 3, 4]
    parallel: true
    agent: ""
    prompt: |
      item {{item}}
      FAKE: key fleet-{{item}}
      FAKE: rate-limit 1
      FAKE: sleep 0.2
      FAKE: reply-json {"n": {{item}}}
    output_schema: {type: object, required: [n]}
  - id: more
    foreach: [5, 6, 7, 8]
    max_concurrent: 1
    agent: ""
    prompt: "item {{item}}"
""",
    "cached.yaml": """
name: cached
steps:
  - id: fan
    foreach: [1, 2, 3]
    parallel: true
    command: echo "item {{item}}"
    cache: true
  - id: one
    command: echo one
    cache: {key: [v1], max_age: 7d, scope: recipe}
""",
    "isolated.yaml": """
name: isolated
steps:
  - id: init
    command: rm -rf repo && git init -q repo && cd repo && echo x > f && git add f && git -c user.name=t -c user.email=t@t commit -qm base
  - id: edit
    working_dir: repo
    isolation: worktree
    command: echo y > g
  - id: copy
    working_dir: repo
    isolation: copy
    command: "false"
    on_error: continue
""",
    "ok.yaml": """
name: hello
context:
  who: world
steps:
  - id: greet
    command: echo "hello {{who}}"
    output: greeting
  - id: shout
    condition: "who == 'nobody'"
    command: echo never
""",
    "fail.yaml": """
name: failing
steps:
  - id: ok
    command: echo fine
  - id: fan
    foreach: [1, 2, 3]
    as: n
    parallel: 2
    collect: results
    on_error: continue
    command: |
      if [ "{{n}}" = 2 ]; then echo "Error: item 2 is broken" >&2; exit 3; fi
      echo "item {{n}}"
  - id: group_a
    parallel_group: g
    command: echo a
  - id: group_b
    parallel_group: g
    command: "echo 'broken member' >&2; exit 7"
  - id: later
    command: echo never
""",
    "fanfail.yaml": """
name: fanfail
steps:
  - id: fan
    foreach: [0, 1, 2, 3, 4]
    as: n
    parallel: 2
    command: |
      if [ "{{n}}" = 0 ]; then sleep 0.3; echo "item 0 failed" >&2; exit 1; fi
      sleep 30
""",
    "child.yaml": """
name: child
context:
  label: x
steps:
  - id: inner
    command: echo "child {{label}}"
    output: child_out
""",
    "mix.yaml": """
name: mix
context:
  flag: ""
hooks:
  post_step: echo "hook after {{step.id}}"
steps:
  - id: call
    recipe: child.yaml
    context:
      label: y
    output: delta
  - id: ask
    agent: helper
    prompt: |
      Summarize.
      FAKE: bad-json 1
      FAKE: reply-json {"summary": "short"}
    parse_json: true
    output: answer
  - id: flaky
    command: |
      n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count
      [ "$n" -ge 1 ] || { echo "try again" >&2; exit 1; }
      echo "done on $((n+1))"
    retry:
      max_attempts: 3
      initial_delay: 0.1
  - id: maybe
    condition: "flag == 'yes'"
    command: echo skipped
    output: maybe_out
  - id: use
    command: echo "maybe={{maybe_out}}"
  - id: spin
    command: sleep 0.8; echo slept
  - id: noisy
    parse_json: true
    command: echo "not json"
  - id: poll
    while_condition: "{{_loop_index}} < 2"
    max_while_iterations: 5
    steps:
      - id: tick
        command: echo tick
  - id: long_line
    command: "head -c 5000 /dev/zero | tr '\\\\0' x; echo"
  - id: many
    command: seq 1 1500
  - id: slow
    timeout: 0.5
    on_error: continue
    command: sleep 30
  - id: agent_bad
    prompt: "FAKE: exit 2 boom"
    on_error: continue
""",
    "gate.yaml": """
name: gated
stages:
  - name: build
    steps:
      - id: compile
        command: echo built
        output: artifact
  - name: ship
    approval:
      required: true
      prompt: "Ship {{artifact}}?"
    steps:
      - id: review
        requires_approval: true
        approval_prompt: "Really ship {{artifact}}?"
      - id: deploy
        command: echo "deploying {{artifact}}"
""",
    "fangate.yaml": """
name: fangate
steps:
  - id: fan
    foreach: [1, 2]
    parallel: 2
    steps:
      - id: review
        requires_approval: true
        approval_prompt: "Ship item {{item}}?"
      - id: ship
        command: echo "shipped {{item}}"
""",
    "slow.yaml": """
name: slow
steps:
  - id: quick
    command: echo ready
  - id: wait
    command: "echo waiting; sleep 30"
  - id: after
    command: echo after
""",
    "plan.yaml": """
name: plan
context:
  mode: fast
steps:
  - id: a
    command: echo 1
    output: x
  - id: b
    condition: "x == 1"
    command: echo b
  - id: c
    condition: "len(5) == 1"
    command: echo c
  - id: d
    condition: "mode == 'slow'"
    command: echo d
  - id: fan
    foreach: [1, 2]
    steps:
      - id: inner
        command: echo "{{item}}"
""",
    "rich.yaml": """
name: rich
description: every key explain can show
version: 2.1.0
author: docs
tags: [demo]
execution: dag
default_step_timeout: 60
output: final
inputs: {target: {type: string}}
parameters: {level: 1}
env:
  LEVEL: "1"
context:
  items: [1, 2]
  final: ""
limits: {fake: 2, api: 1}
budget: {cost_usd: 5, tokens: 100000}
steps:
  - id: build
    name: Build
    description: build it
    command: echo build
    output: built
    output_exit_code: build_rc
    timeout: 30
    retry: {max_attempts: 2, backoff: linear, initial_delay: 1, max_delay: 5, jitter: 0.5}
    on_error: continue
    when_tags: [ci]
    working_dir: .
    env: {MODE: fast}
    limit_group: api
    cache: {key: [v1], max_age: 7d, scope: recipe, files: ["*.yaml"]}
  - id: ask
    agent: helper
    mode: ANALYZE
    model: small
    prompt: "Look at {{built}}"
    parse_json: true
    parse_json_required: true
    output_schema: {type: object}
    schema_retries: 1
    cache: true
    depends_on: [build]
  - id: edit
    command: echo edit
    isolation: worktree
    depends_on: [build]
  - id: call
    recipe: child.yaml
    context: {label: z}
    depends_on: [build]
  - id: fan
    foreach: "{{items}}"
    as: n
    parallel: 2
    collect: fanned
    max_iterations: 10
    depends_on: [build]
    command: echo "{{n}}"
  - id: poll
    while_condition: "{{_loop_index}} < 1"
    max_while_iterations: 3
    break_when: "{{_loop_index}} > 5"
    update_context: {final: done}
    depends_on: [build]
    steps:
      - id: tick
        command: echo tick
  - id: gate
    requires_approval: true
    approval_prompt: ok?
    approval_timeout: 10
    approval_default: approve
    depends_on: [fan]
  - id: pa
    parallel_group: g
    command: echo pa
    depends_on: [gate]
""",
}

AGENTS = {
    "agents/helper.md": "---\ndescription: a test persona\n---\nYou help.\n",
    "agents2/helper.md": "---\ndescription: another helper\n---\nYou help too.\n",
    "agents2/broken.md": "---\ndescription: [unclosed\n---\nbody\n",
}

LISTED = {
    "r1/hello.yaml": RECIPES["ok.yaml"],
    "r1/broken.yaml": "name: broken\nsteps:\n  - id: a\n    comand: echo\n",
    "r2/hello.yaml": RECIPES["ok.yaml"],
}


# ---- what the code can emit ------------------------------------------------------------------

def enum_values(text, name):
    m = re.search(r"enum class " + name + r"\s*\{(.*?)\};", text, re.S)
    if not m:
        return None
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", m.group(1), flags=re.S)
    return [v.strip().split("=")[0].strip() for v in body.split(",") if v.strip()]


def names_of(text, enum):
    """The strings a `to_string(enum …)` switch in names.cpp returns, by enumerator."""
    m = re.search(r"to_string\(" + enum + r" \w+\) noexcept \{(.*?)\n\}", text, re.S)
    if not m:
        return None
    return dict(re.findall(r"case " + enum + r"::(\w+): return \"([^\"]*)\";", m.group(1)))


def code_vocabulary(repo):
    src = pathlib.Path(repo) / "src"
    events_hpp = (pathlib.Path(repo) / "include/arun/events.hpp").read_text()
    results_hpp = (pathlib.Path(repo) / "include/arun/results.hpp").read_text()
    plan_hpp = (pathlib.Path(repo) / "include/arun/plan.hpp").read_text()
    names_cpp = (src / "engine/names.cpp").read_text()
    plan_cpp = (src / "engine/plan.cpp").read_text()
    vocab = {}
    for key, header, enum, names in [
        ("event", events_hpp, "event_kind", names_cpp),
        ("step_status", results_hpp, "step_status", names_cpp),
        ("run_status", results_hpp, "run_status", names_cpp),
        ("verdict", plan_hpp, "plan_verdict", plan_cpp),
    ]:
        declared = enum_values(header, enum)
        named = names_of(names, enum)
        if not check(declared and named, f"cannot read enum {enum} or its to_string names from the sources"):
            continue
        check(set(declared) == set(named), f"{enum}: enumerators {sorted(declared)} but names for {sorted(named)}")
        vocab[key] = set(named.values())
    codes = set()
    for path in src.rglob("*.cpp"):
        text = path.read_text()
        codes |= set(re.findall(r'(?:\.code\s*=\s*|set_code\(|refuse\(|\brun\()"([a-z]+(?:-[a-z]+)*)"', text))
    codes.add("invalid-recipe")  # the default of a diagnostic without a code (diagnostic_render.cpp)
    vocab["code"] = codes
    return vocab


# ---- running arun ----------------------------------------------------------------------------

class Arun:
    def __init__(self, binary, root, repo):
        self.binary = binary
        self.root = root
        self.work = root / "work"
        self.sessions = root / "sessions"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ARUN_", "AMPLIHACK_", "AMPLIFIER_", "XDG_", "FAKE_AGENT"))}
        env.update({
            "HOME": str(root / "home"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_STATE_HOME": str(root / "state"),
            "ARUN_SESSION_DIR": str(self.sessions),
            "FAKE_AGENT_STATE": str(root / "fake-agent"),
            "NO_COLOR": "1",
        })
        # The stand-in agent, run by this very Python: HOME points elsewhere, so a python3 found
        # through shims that read $HOME might not start.
        fake = pathlib.Path(repo) / "tools" / "fake-agent"
        if fake.exists():
            wrapper = root / "fake-agent.sh"
            wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
            wrapper.chmod(0o755)
            env["ARUN_FAKE_AGENT"] = str(wrapper)
        self.env = env

    def args(self, *extra):
        return [self.binary, *extra]

    def run(self, *extra, expect=None, label=None, timeout=120):
        label = label or " ".join(extra)
        p = subprocess.run(self.args(*extra), cwd=self.work, env=self.env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=timeout)
        if expect is not None:
            check(p.returncode == expect,
                  f"{label}: exit {p.returncode}, expected {expect}; stderr: {p.stderr.strip()[:400]}")
        check(not leftovers(self.root), f"{label}: processes left behind: {leftovers(self.root)}")
        return p

    def document(self, p, label):
        """The one JSON document on stdout."""
        lines = p.stdout.splitlines()
        if not check(len(lines) == 1, f"{label}: stdout holds {len(lines)} lines, expected one JSON document"):
            return None
        try:
            return json.loads(lines[0])
        except ValueError as e:
            check(False, f"{label}: stdout is not JSON: {e}")
            return None


def leftovers(root):
    """Live processes (not zombies) whose working directory is inside `root`."""
    found = []
    prefix = str(root)
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (cwd == prefix or cwd.startswith(prefix + "/")):
            found.append(pid)
    return found


def kill_leftovers(root):
    for pid in leftovers(root):
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


# ---- the checks ------------------------------------------------------------------------------

class Schemas:
    def __init__(self, repo):
        self.validators = {}
        self.raw = {}
        for path in sorted((pathlib.Path(repo) / "schema").glob("*.schema.json")):
            name = path.name[: -len(".schema.json")]
            if name == "recipe":
                continue
            schema = json.loads(path.read_text())
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            self.raw[name] = schema
            self.validators[name] = cls(schema)
        self.seen = {}  # schema name -> documents validated

    def validate(self, name, doc, label):
        if not check(name in self.validators, f"no schema/{name}.schema.json"):
            return False
        self.seen.setdefault(name, []).append(doc)
        errors = sorted(self.validators[name].iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
        for e in errors[:5]:
            where = "/".join(str(p) for p in e.absolute_path) or "(top)"
            check(False, f"{label}: {name}.schema.json at {where}: {e.message[:300]}")
        return not errors

    def refuses(self, name, doc):
        return not self.validators[name].is_valid(doc)


def read_events(path, schemas, label, collected):
    text = pathlib.Path(path).read_text() if pathlib.Path(path).exists() else ""
    if not check(text.endswith("\n") or not text, f"{label}: the last event line is not ended"):
        return []
    events = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            e = json.loads(line)
        except ValueError as err:
            check(False, f"{label}:{n}: not JSON: {err}")
            continue
        schemas.validate("event", e, f"{label}:{n}")
        events.append(e)
    collected.extend(events)
    return events


def session_id_of(doc):
    return doc.get("session_id") if isinstance(doc, dict) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arun", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    opts = ap.parse_args()
    opts.arun = os.path.abspath(opts.arun)
    opts.repo = os.path.abspath(opts.repo)
    started = time.monotonic()

    schemas = Schemas(opts.repo)
    vocab = code_vocabulary(opts.repo)
    root = pathlib.Path(tempfile.mkdtemp(prefix="arun-formats-")).resolve()
    try:
        run_all(opts, schemas, vocab, root)
    finally:
        kill_leftovers(root)
        if opts.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"formats: {len(failures)} failure(s); "
          + ", ".join(f"{len(v)} {k}" for k, v in sorted(schemas.seen.items()))
          + f" validated in {time.monotonic() - started:.1f}s")
    return 1 if failures else 0


def run_all(opts, schemas, vocab, root):
    for d in ("work", "sessions", "home", "config", "state", "fake-agent", "audit", "events"):
        (root / d).mkdir()
    arun = Arun(opts.arun, root, opts.repo)
    for name, text in {**RECIPES, **AGENTS, **LISTED}.items():
        path = arun.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip("\n"))
    events = []
    results = []

    def run_recipe(name, *extra, expect, label=None, timeout=120):
        label = label or name
        ev = root / "events" / f"{label}.jsonl"
        p = arun.run(name, "-q", "--output-format", "json", "--events", str(ev), "--agent-cli", "fake",
                     "--agent-dir", "agents", *extra, expect=expect, label=label, timeout=timeout)
        return collect_run(arun, schemas, p, ev, label, results, events)

    # Success with a skipped step.
    ok = run_recipe("ok.yaml", expect=0)
    # A failing parallel group, a foreach with a failed iteration, a step never run.
    run_recipe("fail.yaml", expect=1)
    # A fatal iteration: one cancelled, three never started.
    fan = run_recipe("fanfail.yaml", "--kill-grace", "1", expect=1)
    if fan:
        it = fan["step_results"][0].get("iterations", {})
        check(it.get("cancelled", 0) >= 1 and it.get("not_run", 0) >= 1,
              f"fanfail.yaml: iterations {it} lack cancelled/not_run counts")
    # Sub-recipe, agents, retries, hooks, warnings, heartbeats, loops, timeouts, bounded output;
    # the audit file too.
    mix = run_recipe("mix.yaml", "--heartbeat", "0.2", "--kill-grace", "0.5", "--audit-dir", str(root / "audit"),
                     expect=0)
    if mix:
        audit = root / "audit" / f"mix-{mix['session_id']}.jsonl"
        check(audit.exists(), f"--audit-dir: no {audit.name} in {os.listdir(root / 'audit')}")
        read_events(audit, schemas, "mix.yaml --audit-dir", events)
        ask = next((s for s in mix["step_results"] if s["step_id"] == "ask"), {})
        check(ask.get("status") == "completed" and ask.get("output") == {"summary": "short"},
              f"mix.yaml: the agent step's parse_json reminder did not give its JSON: {ask}")
    # Agent fleets: a provider limit halved by rate limits and grown back (limit_changed),
    # usage in results and events, then a budget that stops the run (budget_exhausted) and
    # a resume with a larger one.
    fleet = run_recipe("fleet.yaml", "--rate-limit-delay", "0.05", "--max-cost", "0.0004", expect=6)
    if fleet:
        check(fleet.get("status") == "budget_exhausted" and "usage" in fleet,
              f"fleet.yaml: status {fleet.get('status')}, usage {fleet.get('usage')}")
        show_state(arun, schemas, fleet["session_id"], "fleet-1")
        spent = arun.document(arun.run("report", fleet["session_id"], "--output-format", "json", expect=0,
                                       label="report fleet-1"), "report fleet-1")
        if spent is not None and schemas.validate("report", spent, "report fleet-1"):
            check(spent["session"]["status"] == "budget_exhausted" and spent["usage"]["by_model"],
                  f"report fleet-1: status {spent['session']['status']}, usage {spent['usage']}")
        resume(arun, schemas, root, results, events, fleet["session_id"], "fleet-2", "--max-cost", "10", expect=0)
    # Cached steps: the second run reuses every output (`cached` in results and events).
    run_recipe("cached.yaml", expect=0, label="cached-1")
    again = run_recipe("cached.yaml", expect=0, label="cached-2")
    if again:
        fan, one = again["step_results"]
        check(fan.get("iterations", {}).get("cached") == 3 and one.get("cached") is True,
              f"cached.yaml: the second run did not reuse its outputs: {again['step_results']}")
    # Isolated steps: a worktree and its branch, a copy kept after a failure.
    iso = run_recipe("isolated.yaml", expect=0)
    if iso:
        edit, copy = iso["step_results"][1], iso["step_results"][2]
        check(edit.get("branch", "").startswith("arun/") and "worktree" in copy,
              f"isolated.yaml: no branch or kept copy in {iso['step_results']}")
    # Approval gates: a stage gate, then a step gate, approved then denied.
    gated = run_recipe("gate.yaml", "--no-input", expect=5, label="gate-1")
    if gated:
        sid = gated["session_id"]
        check(gated.get("waiting_approval", {}).get("step_id") == "stage:ship",
              f"gate.yaml: waiting_approval is {gated.get('waiting_approval')}")
        show_state(arun, schemas, sid, "gate-1")
        waiting = arun.document(arun.run("report", sid, "--output-format", "json", expect=0, label="report gate-1"),
                                "report gate-1")
        if waiting is not None and schemas.validate("report", waiting, "report gate-1"):
            gates = {g["gate"]: g["decision"] for g in waiting["gates"]["gates"]}
            check(waiting["session"]["status"] == "waiting_approval" and gates.get("stage:ship") == "pending" and
                  waiting["counts"]["waiting"] == 1,
                  f"report gate-1: status {waiting['session']['status']}, gates {gates}, counts {waiting['counts']}")
        arun.run("approve", sid, expect=0)
        resume(arun, schemas, root, results, events, sid, "gate-2", "--no-input", expect=5)
        arun.run("deny", sid, "--reason", "not today", expect=0)
        resume(arun, schemas, root, results, events, sid, "gate-3", "--no-input", expect=1)
        state = show_state(arun, schemas, sid, "gate-3")
        if state:
            check(state.get("approvals", {}).get("review", {}).get("decision") == "denied",
                  f"state.json: the review gate's decision is {state.get('approvals')}")
        read_events(arun.sessions / sid / "events.jsonl", schemas, "gate session events.jsonl", events)
    # Gates in a fan-out: several wait at once, the loop counts them.
    fangate = run_recipe("fangate.yaml", "--no-input", expect=5, label="fangate-1")
    if fangate:
        sid = fangate["session_id"]
        check(len(fangate.get("waiting_approvals", [])) == 2,
              f"fangate.yaml: waiting_approvals {fangate.get('waiting_approvals')}")
        check(fangate["step_results"][0].get("iterations", {}).get("waiting") == 2,
              f"fangate.yaml: iterations {fangate['step_results'][0].get('iterations')}")
        show_state(arun, schemas, sid, "fangate-1")
        arun.run("approve", sid, "--all", expect=0)
        resume(arun, schemas, root, results, events, sid, "fangate-2", "--no-input", expect=0)
    # A stored output past --max-output: the result and state.json hold the documented stand-in.
    spilled = run_recipe("spilled.yaml", "--spill-outputs-over", "100", "--max-output", "4000", expect=0)
    if spilled:
        # The budget goes in document order: `output` carries the value, the rest stand-ins.
        check(spilled.get("output") == "b" * 3000, "spilled.yaml: the result's output lacks the value")
        stand_in = spilled["context"].get("blob")
        for name in ("result", "state"):
            shape = {**schemas.raw[name]["$defs"]["omitted_output"], "$defs": schemas.raw[name]["$defs"]}
            try:
                jsonschema.validate(stand_in, shape)
            except jsonschema.ValidationError as e:
                check(False, f"spilled.yaml: {stand_in} is not {name}'s omitted_output: {e.message[:200]}")
        show_state(arun, schemas, spilled["session_id"], "spilled")
    # --reload: the result says what it kept.
    if ok:
        doc = resume(arun, schemas, root, results, events, ok["session_id"], "ok-reload", "--reload", expect=0)
        check(doc is not None and "reload" in doc, "resume --reload: the result has no `reload`")
        show_state(arun, schemas, ok["session_id"], "ok-reload")
    # An interrupted run.
    interrupted(arun, schemas, root, results, events)

    # Documents of the other commands.
    p = arun.run("plan.yaml", "--dry-run", "--output-format", "json", expect=0)
    plan = arun.document(p, "--dry-run")
    if plan is not None and schemas.validate("plan", plan, "--dry-run"):
        seen = {s["verdict"] for s in plan["steps"]}
        check(seen == vocab.get("verdict", seen), f"--dry-run: verdicts seen {sorted(seen)}, the code has "
              f"{sorted(vocab.get('verdict', []))}")
    for recipe, code, label in [("ok.yaml", 0, "validate valid"), ("r1/broken.yaml", 2, "validate invalid"),
                                ("nothere", 3, "validate not found"), (None, 4, "validate no recipe")]:
        p = arun.run("validate", *([recipe] if recipe else []), "--output-format", "json", expect=code, label=label)
        doc = arun.document(p, label)
        if doc is not None:
            schemas.validate("validate", doc, label)
    for recipe in ("rich.yaml", "gate.yaml", "mix.yaml"):
        p = arun.run("explain", recipe, "--output-format", "json", expect=0, label=f"explain {recipe}")
        doc = arun.document(p, f"explain {recipe}")
        if doc is not None:
            schemas.validate("explain", doc, f"explain {recipe}")
    p = arun.run("list", "-R", "r1", "-R", "r2", "--output-format", "json", expect=0, label="list")
    doc = arun.document(p, "list")
    if doc is not None and schemas.validate("list", doc, "list"):
        check({(r["valid"], r["shadowed"]) for r in doc["recipes"]} >= {(True, False), (False, False), (True, True)},
              f"list: expected a valid, an invalid and a shadowed recipe: {doc['recipes']}")
    p = arun.run("agents", "list", "--agent-dir", "agents", "--agent-dir", "agents2", "--output-format", "json",
                 expect=0, label="agents list")
    doc = arun.document(p, "agents list")
    if doc is not None and schemas.validate("agents", doc, "agents list"):
        check({(a["valid"], a["shadowed"]) for a in doc["agents"]} >= {(True, False), (False, False), (True, True)},
              f"agents list: expected a valid, an invalid and a shadowed agent: {doc['agents']}")
    p = arun.run("sessions", "list", "--output-format", "json", expect=0, label="sessions list")
    doc = arun.document(p, "sessions list")
    if doc is not None and schemas.validate("sessions", doc, "sessions list"):
        check({s["status"] for s in doc} >= {"completed", "failed", "cancelled"},
              f"sessions list: statuses {sorted({s['status'] for s in doc})}")
    p = arun.run("config", "--output-format", "json", expect=0, label="config")
    doc = arun.document(p, "config")
    if doc is not None:
        schemas.validate("config", doc, "config")
    # Every session's own events.jsonl, and its report: completed, failed, cancelled,
    # waiting, over budget, resumed, cached, isolated (tests/tools/report_test.py has the live
    # and the killed ones).
    for path in sorted(arun.sessions.glob("*/events.jsonl")):
        read_events(path, schemas, f"session {path.parent.name} events.jsonl", [])
    statuses = set()
    for path in sorted(p.parent for p in arun.sessions.glob("*/state.json")):
        label = f"report {path.name}"
        doc = arun.document(arun.run("report", path.name, "--output-format", "json", expect=0, label=label), label)
        if doc is not None and schemas.validate("report", doc, label):
            statuses.add(doc["session"]["status"])
    check(statuses >= {"completed", "failed", "cancelled"},
          f"report: the sessions reported cover only {sorted(statuses)}")

    check_vocabulary(schemas, vocab)
    check_coverage(schemas, vocab, events, results)
    check_closed(schemas)


def collect_run(arun, schemas, p, ev, label, results, events):
    """A finished run's result document (checked against result.schema.json and kept in
    `results`) and its --events file (each line checked, kept in `events`); the document."""
    doc = arun.document(p, label)
    if doc is not None:
        schemas.validate("result", doc, label)
        results.append(doc)
    read_events(ev, schemas, f"{label} --events", events)
    return doc


def resume(arun, schemas, root, results, events, sid, label, *extra, expect):
    ev = root / "events" / f"{label}.jsonl"
    p = arun.run("resume", sid, "-q", "--output-format", "json", "--events", str(ev), *extra,
                 expect=expect, label=label)
    return collect_run(arun, schemas, p, ev, label, results, events)


def show_state(arun, schemas, sid, label):
    p = arun.run("sessions", "show", sid, "--output-format", "json", expect=0, label=f"sessions show ({label})")
    doc = arun.document(p, f"sessions show ({label})")
    if doc is None:
        return None
    schemas.validate("state", doc, f"state.json ({label})")
    on_disk = json.loads((arun.sessions / sid / "state.json").read_text())
    check(same_json(doc, on_disk), f"sessions show ({label}): not the session's state.json")
    return doc


def same_json(a, b):
    """Equal JSON values; numbers equal to within a few units in the last place (this is a
    check of the format, not of how numbers are parsed and printed again)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-14, abs_tol=0.0)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return a == b


def interrupted(arun, schemas, root, results, events):
    ev = root / "events" / "slow.jsonl"
    proc = subprocess.Popen(arun.args("slow.yaml", "-q", "--output-format", "json", "--events", str(ev),
                                      "--kill-grace", "1"),
                            cwd=arun.work, env=arun.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if ev.exists() and '"line":"waiting"' in ev.read_text():
                break
            time.sleep(0.05)
        else:
            check(False, "slow.yaml: the step never started")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check(proc.returncode == 143, f"slow.yaml after SIGTERM: exit {proc.returncode}, expected 143; {err[:300]}")
    check(not leftovers(root), "slow.yaml after SIGTERM: processes left behind")
    lines = out.splitlines()
    if check(len(lines) == 1, f"slow.yaml after SIGTERM: stdout holds {len(lines)} lines"):
        doc = json.loads(lines[0])
        schemas.validate("result", doc, "slow.yaml (cancelled)")
        results.append(doc)
        check(doc.get("status") == "cancelled", f"slow.yaml after SIGTERM: status {doc.get('status')}")
    read_events(ev, schemas, "slow.yaml --events", events)


def check_vocabulary(schemas, vocab):
    """What the code can emit and what the schemas allow are the same sets."""
    event = schemas.raw.get("event", {})
    kinds = set(event.get("properties", {}).get("event", {}).get("enum", []))
    branches = {b["if"]["properties"]["event"]["const"] for b in event.get("allOf", [])}
    if "event" in vocab:
        check(vocab["event"] <= kinds, f"event kinds the code emits without a schema: {sorted(vocab['event'] - kinds)}")
        check(kinds <= vocab["event"], f"event kinds in the schema the code never emits: {sorted(kinds - vocab['event'])}")
        check(kinds <= branches, f"event kinds without their own shape in the schema: {sorted(kinds - branches)}")
        for kind in kinds:
            shape = event.get("$defs", {}).get(kind, {})
            check(shape.get("additionalProperties") is False, f"event.schema.json: {kind} is not closed")
    step_statuses = {
        "result": set(schemas.raw["result"]["$defs"]["step"]["properties"]["status"]["enum"]),
        "event": set(event["$defs"]["step_end"]["properties"]["status"]["enum"]),
        "state": set(schemas.raw["state"]["properties"]["steps"]["items"]["properties"]["status"]["enum"]),
    }
    for name, allowed in step_statuses.items():
        check(allowed == vocab.get("step_status", allowed),
              f"{name}.schema.json: step statuses {sorted(allowed)}, the code has {sorted(vocab.get('step_status', []))}")
    run_statuses = {
        "result": set(schemas.raw["result"]["properties"]["status"]["enum"]),
        "event": set(event["$defs"]["recipe_end"]["properties"]["status"]["enum"]),
    }
    for name, allowed in run_statuses.items():
        check(allowed == vocab.get("run_status", allowed),
              f"{name}.schema.json: run statuses {sorted(allowed)}, the code has {sorted(vocab.get('run_status', []))}")
    verdicts = set(schemas.raw["plan"]["properties"]["steps"]["items"]["properties"]["verdict"]["enum"])
    check(verdicts == vocab.get("verdict", verdicts),
          f"plan.schema.json: verdicts {sorted(verdicts)}, the code has {sorted(vocab.get('verdict', []))}")
    codes = set(schemas.raw["validate"]["$defs"]["diagnostic"]["properties"]["code"]["enum"])
    check(vocab["code"] <= codes, f"diagnostic codes the code emits without a schema: {sorted(vocab['code'] - codes)}")
    check(codes <= vocab["code"], f"diagnostic codes in the schema the code never emits: {sorted(codes - vocab['code'])}")


def check_coverage(schemas, vocab, events, results):
    kinds = {e.get("event") for e in events}
    check(kinds >= vocab.get("event", set()), f"event kinds never seen: {sorted(vocab.get('event', set()) - kinds)}")
    types = {e.get("type") for e in events if "type" in e}
    all_types = set(schemas.raw["event"]["$defs"]["step_type"]["enum"])
    check(types >= all_types, f"event step types never seen: {sorted(all_types - types)}")
    statuses = set()

    def walk(steps):
        for s in steps:
            statuses.add(s["status"])
            walk(s.get("children", []))
    for r in results:
        walk(r.get("step_results", []))
    check(statuses >= vocab.get("step_status", set()),
          f"step statuses never seen in a result: {sorted(vocab.get('step_status', set()) - statuses)}")
    run_statuses = {r.get("status") for r in results}
    check(run_statuses >= vocab.get("run_status", set()),
          f"run statuses never seen: {sorted(vocab.get('run_status', set()) - run_statuses)}")
    step_keys = set()

    def keys(steps):
        for s in steps:
            step_keys.update(s)
            keys(s.get("children", []))
    for r in results:
        keys(r.get("step_results", []))
    optional = set(schemas.raw["result"]["$defs"]["step"]["properties"]) - set(schemas.raw["result"]["$defs"]["step"]["required"])
    # Only a cluster executor writes `queued` (a Slurm job's wait in the queue): these runs are
    # local; tests/e2e/slurm_resources_tests.cpp checks it on a private Slurm cluster.
    optional -= {"queued"}
    check(step_keys >= optional, f"optional step result keys never seen: {sorted(optional - step_keys)}")
    counts = set()
    for r in results:
        for s in r.get("step_results", []):
            counts.update(s.get("iterations", {}))
    all_counts = set(schemas.raw["result"]["$defs"]["iterations"]["properties"])
    check(counts >= all_counts, f"iteration counts never seen: {sorted(all_counts - counts)}")
    top = set().union(*(r.keys() for r in results)) if results else set()
    all_top = set(schemas.raw["result"]["properties"])
    check(top >= all_top, f"run result keys never seen: {sorted(all_top - top)}")
    seen_flags = {
        "truncated output line": any(e.get("event") == "step_output" and e.get("truncated") for e in events),
        "timed-out step": any(e.get("event") == "step_end" and e.get("timed_out") for e in events),
        "retry with a delay": any(e.get("event") == "step_retry" and e.get("delay", 0) > 0 for e in events),
        "output lines left out of an event file": any(
            e.get("event") == "warning" and "left out of the events" in e.get("message", "") for e in events),
    }
    for what, seen in seen_flags.items():
        check(seen, f"never seen: {what}")


def check_closed(schemas):
    """Each captured document with an unknown key must be refused: the formats are closed."""
    for name, docs in schemas.seen.items():
        for doc in docs[:20]:
            mutated = copy.deepcopy(doc)
            target = mutated[0] if isinstance(mutated, list) and mutated else mutated
            if not isinstance(target, dict):
                continue
            target["zz_unknown_key"] = 1
            if not check(schemas.refuses(name, mutated), f"{name}.schema.json accepts an unknown key"):
                break


if __name__ == "__main__":
    sys.exit(main())
