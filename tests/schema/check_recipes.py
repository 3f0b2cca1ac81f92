#!/usr/bin/env python3
"""The recipe corpus, the JSON Schema and `arun validate` agree.

  (a) every DATA/valid/*.yaml passes the schema;
  (b) `arun validate` accepts every valid file (exit 0, no "warning:") and rejects every
      DATA/invalid/*.yaml (exit 2) with the position and message of its first line
      `# expect: LINE:COLUMN: error: MESSAGE`;
  (c) an invalid file whose second line is `# schema: invalid` is rejected by the schema too;
  (d) every REPO/recipes/**/*.yaml passes the schema.

Prints one line per failure and a closing `N passed, M failed`; exits 1 on any failure.
"""

import argparse
import json
import pathlib
import re
import subprocess
import sys

import jsonschema
import yaml


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML resolves scalars by YAML 1.1 (yes/no/on/off are booleans, 010 is octal,
    2025-01-01 is a date). arun follows the YAML 1.2 core schema (docs/reference/recipe.md,
    "The file"), and the schema must see the types arun sees: only true/false (any case) are
    booleans, numbers are decimal (or 0x/0o), dates stay strings."""


_DROPPED = {
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:value",
}
Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _DROPPED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"), list("tTfF"))
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789"))
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF))$"),
    list("-+0123456789."))


def _construct_bool(loader, node):
    return loader.construct_scalar(node).lower() == "true"


def _construct_int(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith("0x"):
        return int(text[2:], 16)
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 10)


def _construct_float(loader, node):
    text = loader.construct_scalar(node).lower()
    return float(text.replace(".inf", "inf"))


Yaml12Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self):
        self.passed += 1

    def fail(self, where, message):
        self.failed += 1
        print(f"FAIL {where}: {message}")


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Yaml12Loader)


def schema_errors(validator, document):
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return [f"/{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in errors]


def validate_flags(arun):
    """The corpus names agents (ns:name) whose persona files are not part of it: when arun
    checks agents at validation time (docs/agents.md, "Resolution order"), allow missing ones. The
    agent CLI is the fake one, which the build always has."""
    proc = subprocess.run([arun, "validate", "--help"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    help_text = proc.stdout + proc.stderr
    flags = ["--allow-missing-agents"] if "--allow-missing-agents" in help_text else []
    # validate warns when the agent CLI is not installed: the fake agent always is.
    if "--agent-cli" in help_text:
        flags += ["--agent-cli", "fake"]
    return flags


# With --allow-missing-agents, an agent the corpus names but does not ship is a warning of
# this form; it says nothing about the recipe itself.
MISSING_AGENT = re.compile(
    r"^.*: warning: (?:recovery_on_failure of )?step '[^']*': agent '[^']*' not found .*$\n?", re.MULTILINE)


def run_validate(arun, path, flags=()):
    proc = subprocess.run([arun, "validate", *flags, str(path)], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    return proc.returncode, proc.stderr


def check_schema_accepts(checker, validator, path, label):
    try:
        document = load_yaml(path)
    except yaml.YAMLError as e:
        checker.fail(label, f"not loadable as YAML: {e}")
        return
    errors = schema_errors(validator, document)
    if errors:
        checker.fail(label, "schema rejects it: " + "; ".join(errors[:5]))
    else:
        checker.ok()


def header(path):
    """The `# expect:` line and whether the second line says `# schema: invalid`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    expect = None
    if lines and lines[0].startswith("# expect:"):
        m = re.match(r"# expect:\s*(\d+):(\d+):\s*error:\s*(.+?)\s*$", lines[0])
        if m:
            expect = (int(m.group(1)), int(m.group(2)), m.group(3))
    schema_invalid = len(lines) > 1 and lines[1].strip() == "# schema: invalid"
    return expect, schema_invalid


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arun", required=True, help="the arun binary")
    parser.add_argument("--data", required=True, help="directory holding valid/ and invalid/")
    parser.add_argument("--schema", required=True, help="recipe.schema.json")
    parser.add_argument("--repo", help="repository root: its recipes/**/*.yaml must pass the schema")
    args = parser.parse_args()

    with open(args.schema, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    checker = Checker()
    flags = validate_flags(args.arun)

    data = pathlib.Path(args.data)
    valid = sorted((data / "valid").glob("*.yaml"))
    invalid = sorted((data / "invalid").glob("*.yaml"))
    if not valid:
        checker.fail(data / "valid", "no recipes found")
    if not invalid:
        checker.fail(data / "invalid", "no recipes found")

    for path in valid:
        label = f"valid/{path.name}"
        # (a) the schema accepts it
        check_schema_accepts(checker, validator, path, label + " [schema]")
        # (b) arun accepts it, without warnings
        rc, stderr = run_validate(args.arun, path, flags)
        if rc != 0:
            checker.fail(label + " [arun]", f"exit {rc}, expected 0:\n{stderr.rstrip()}")
        elif "warning:" in MISSING_AGENT.sub("", stderr):
            checker.fail(label + " [arun]", f"warnings:\n{stderr.rstrip()}")
        else:
            checker.ok()

    for path in invalid:
        label = f"invalid/{path.name}"
        expect, schema_invalid = header(path)
        if expect is None:
            checker.fail(label, "first line must be '# expect: LINE:COLUMN: error: MESSAGE'")
            continue
        line, column, message = expect
        # (b) arun rejects it with the expected first error
        rc, stderr = run_validate(args.arun, path, flags)
        errors = [l for l in stderr.splitlines() if ": error: " in l]
        wanted = f"{path}:{line}:{column}: error: "
        if rc != 2:
            checker.fail(label + " [arun]", f"exit {rc}, expected 2:\n{stderr.rstrip()}")
        elif not errors or not errors[0].startswith(wanted) or message not in errors[0]:
            first = errors[0] if errors else "<no error>"
            checker.fail(label + " [arun]", f"first error is\n  {first}\nexpected\n  {wanted}...{message}...")
        else:
            checker.ok()
        # (c) the schema rejects what it can express
        if schema_invalid:
            try:
                document = load_yaml(path)
            except yaml.YAMLError as e:
                checker.fail(label + " [schema]", f"marked '# schema: invalid' but not loadable as YAML: {e}")
                continue
            if schema_errors(validator, document):
                checker.ok()
            else:
                checker.fail(label + " [schema]", "arun rejects it but the schema accepts it")

    # (d) the repository's own recipes pass the schema
    if args.repo:
        repo = pathlib.Path(args.repo)
        for path in sorted((repo / "recipes").glob("**/*.yaml")):
            check_schema_accepts(checker, validator, path, f"{path.relative_to(repo)} [schema]")

    print(f"{checker.passed} passed, {checker.failed} failed")
    return 1 if checker.failed else 0


if __name__ == "__main__":
    sys.exit(main())
