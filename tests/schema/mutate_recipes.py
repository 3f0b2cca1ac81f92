#!/usr/bin/env python3
"""The reader and the recipe schema agree on recipes they have never seen.

Takes each valid recipe of the corpus, changes one thing (a step key set to a value of
another type, a key removed, a top-level key replaced), writes it out and runs `arun validate`
on it, which checks what arun accepts against the schema compiled into it (code "schema").
Any such diagnostic is a drift between arun and the schema editors use: a failure.

Deterministic (a fixed seed); prints each drift with the mutated file, then `N mutations,
M drifts`; exits 1 on any drift.
"""

import argparse
import copy
import json
import pathlib
import random
import subprocess
import sys
import tempfile

import yaml

VALUES = ["x", 3, 2.5, True, False, None, [], ["a"], {}, {"a": 1}, "{{x}}", -1, 0, "deny", "continue", "fail",
          "dag", "exponential", "a, b", [1, 2]]
KEYS = ["timeout", "retry", "on_error", "condition", "output", "parse_json", "working_dir", "cwd", "env", "tags",
        "when_tags", "depends_on", "parallel_group", "requires_approval", "approval_prompt", "foreach", "as",
        "max_concurrent", "while_condition", "break_when", "agent", "prompt", "mode", "model", "recipe", "context",
        "command", "output_exit_code", "type", "steps", "continue_on_error", "nonfatal", "fatal", "name",
        "description", "parse_json_required", "collect", "provider", "model_role", "auto_stage", "update_context"]


def steps_of(doc):
    out = []

    def walk(steps):
        for s in steps if isinstance(steps, list) else []:
            if isinstance(s, dict):
                out.append(s)
                walk(s.get("steps"))

    walk(doc.get("steps"))
    for stage in doc.get("stages") or []:
        if isinstance(stage, dict):
            walk(stage.get("steps"))
    return out


def mutate(doc, rng):
    steps = steps_of(doc)
    choice = rng.random()
    if steps and choice < 0.45:
        step = rng.choice(steps)
        step[rng.choice(KEYS)] = copy.deepcopy(rng.choice(VALUES))
    elif steps and choice < 0.75:
        step = rng.choice(steps)
        if step:
            del step[rng.choice(sorted(step))]
    else:
        doc[rng.choice(sorted(doc))] = copy.deepcopy(rng.choice(VALUES))
    return doc


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arun", required=True)
    parser.add_argument("--data", required=True, help="directory holding valid/")
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    files = sorted(pathlib.Path(args.data, "valid").glob("*.yaml"))
    drifts = 0
    with tempfile.TemporaryDirectory() as tmp:
        target = pathlib.Path(tmp, "mutated.yaml")
        for n in range(args.count):
            source = files[n % len(files)]
            doc = yaml.safe_load(source.read_text(encoding="utf-8"))
            target.write_text(yaml.safe_dump(mutate(doc, rng), sort_keys=False), encoding="utf-8")
            proc = subprocess.run([args.arun, "validate", str(target), "--output-format", "json",
                                   "--allow-missing-agents", "--agent-cli", "fake"], stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=60)
            try:
                report = json.loads(proc.stdout)
            except json.JSONDecodeError:
                drifts += 1
                print(f"FAIL {source.name} mutation {n}: validate printed no JSON (exit {proc.returncode}): "
                      f"{proc.stderr[:300]}")
                continue
            for d in report["diagnostics"]:
                if d["code"] == "schema":
                    drifts += 1
                    print(f"DRIFT {source.name} mutation {n}: {d['message']}\n{target.read_text()}")
                    break
    print(f"{args.count} mutations, {drifts} drifts")
    return 1 if drifts else 0


if __name__ == "__main__":
    sys.exit(main())
