#!/usr/bin/env python3
"""The recipe reference (docs/reference/*.md) against the code it documents.

1. Fields. Every property the recipe schema defines, at the top level and recursively
   through its definitions, is a documented field of docs/reference/recipe.md, in the table
   for its place; so is every key arun's loader accepts (the key lists of step_reader.cpp and
   recipe_loader.cpp). A documented field is the first cell of a row of a table that follows
   a marker comment naming the place:

       <!-- fields: step -->
       | field | type | default | what it does |
       |---|---|---|---|
       | `timeout` | seconds | ... | ... |

   Places are `recipe` (the top level), a definition of the schema (`step`, `stage`,
   `retry`), or such a place followed by `.KEY` for the object under KEY (`recipe.hooks`,
   `step.recursion`, `stage.approval`). A name in a marked table that neither the schema
   nor the loader knows is an error too.
2. Conditions. Every function and string method the condition engine implements (the
   `functions` and `methods` tables of src/engine/condition/builtins.cpp) has a row in the
   table after `<!-- check: functions -->` (first cell `NAME(...)`) or
   `<!-- check: methods -->` (first cell `s.NAME(...)`) of docs/reference/conditions.md,
   and every type name `isinstance` takes (src/engine/condition/parser.cpp) is in the row
   of `isinstance(`.
3. Examples. Every ```yaml block of the three pages that is a complete recipe (a mapping
   with `name` and `steps` or `stages`) passes `arun validate`. The blocks of one page are
   written to one directory as NAME.yaml first, so examples may call or extend each other by
   name. Marker comments right before a block change what is checked:
       <!-- check: invalid -->     the recipe must be refused (exit 2)
       <!-- check: args ARGS -->   extra arguments for validate and run (e.g. --set x=1)
   and, right before a fenced block that follows a recipe:
       <!-- check: output -->      run the recipe: it succeeds and its final output is the
                                   block's text
       <!-- check: error -->       run the recipe: it fails and its error contains the text
   A table after `<!-- check: conditions -->` (first column a condition in backticks,
   second `true`, `false` or `error`) is evaluated by `arun --dry-run` against the mapping
   in the ```yaml block after `<!-- check: condition-context -->` on the same page.
4. Links. Every relative link of the three pages points at an existing file, and every
   `#anchor` at a heading of its target.

Usage: reference_test.py --arun PATH --repo DIR
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

PAGES = ["recipe.md", "conditions.md", "templates.md"]
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what, file=sys.stderr)


# ---------------------------------------------------------------- markdown helpers

def split_row(line):
    """The cells of a markdown table row, `\\|` kept as `|` inside cells."""
    cells, cell, i = [], "", 0
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body) and body[i + 1] == "|":
            cell += "|"
            i += 2
            continue
        if body[i] == "|":
            cells.append(cell.strip())
            cell = ""
        else:
            cell += body[i]
        i += 1
    cells.append(cell.strip())
    return cells


def blocks_and_markers(text):
    """Walks a page: yields ('marker', value, line), ('fence', info, body, line) and
    ('table', rows, line) in order. Fenced blocks are never read as tables."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*<!--\s*(fields|check)\s*:\s*(.*?)\s*-->\s*$", line)
        if m:
            yield ("marker", (m.group(1), m.group(2)), i + 1)
            i += 1
            continue
        f = re.match(r"^(\s*)(```+|~~~+)\s*([^`\s]*)", line)
        if f:
            fence, info, start = f.group(2), f.group(3), i + 1
            indent = len(f.group(1))
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
                i += 1
            i += 1
            yield ("fence", info, "\n".join(body), start)
            continue
        if line.lstrip().startswith("|"):
            start, rows = i + 1, []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                cells = split_row(lines[i])
                if not all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
                    rows.append(cells)
                i += 1
            yield ("table", rows[1:], start)  # without the header row
            continue
        i += 1


def slug(heading):
    """GitHub's anchor of a heading."""
    s = heading.strip().lower()
    s = re.sub(r"`", "", s)
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(text):
    found, counts = set(), {}
    in_fence = False
    for line in text.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            in_fence = not in_fence
            continue
        m = None if in_fence else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(2))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


# ---------------------------------------------------------------- 1. fields

def schema_places(schema):
    """{place: set(property names)} for every object of the schema that has properties."""
    places = {}
    definitions = schema.get("definitions", {})
    seen_definitions = set()

    def walk(node, place):
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if ref:
            name = ref.split("/")[-1]
            if name not in seen_definitions:
                seen_definitions.add(name)
                walk(definitions[name], name)
            return
        props = node.get("properties")
        if isinstance(props, dict):
            places.setdefault(place, set()).update(props)
            for key, sub in props.items():
                walk(sub, f"{place}.{key}")
        for key in ("anyOf", "oneOf"):
            for sub in node.get(key, []):
                walk(sub, place)
        if isinstance(node.get("items"), dict):
            walk(node["items"], place)

    walk(schema, "recipe")
    for name, node in definitions.items():  # definitions no property refers to
        if name not in seen_definitions:
            seen_definitions.add(name)
            walk(node, name)
    # a $ref'd definition is documented under its own name; `stage.approval` reads better
    # than the schema's internal `stageApproval`
    if "stageApproval" in places:
        places["stage.approval"] = places.pop("stageApproval")
    return places


def string_literals(text):
    return re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', text)


def loader_keys(repo):
    """{place: set(keys)} of the keys arun's loader accepts (its known-key lists)."""
    reader = open(os.path.join(repo, "src/io/recipe/step_reader.cpp")).read()
    loader = open(os.path.join(repo, "src/io/recipe/recipe_loader.cpp")).read()
    keys = {}
    for m in re.finditer(r"const key_list \w+ = \{(.*?)\};", reader, re.S):
        keys.setdefault("step", set()).update(string_literals(m.group(1)))
    m = re.search(r"top_level_keys = \{(.*?)\};", loader, re.S)
    keys.setdefault("recipe", set()).update(string_literals(m.group(1)) if m else [])
    anywhere = set()
    for text in (reader, loader):
        for m in re.finditer(r"check_keys\(\{(.*?)\}", text, re.S):
            anywhere.update(string_literals(m.group(1)))
    keys["anywhere"] = anywhere
    if not keys["step"] or not keys["recipe"] or not anywhere:
        fail("could not read the key lists of step_reader.cpp / recipe_loader.cpp (did they move?)")
    return keys


def documented_fields(text):
    """{place: {name: line}} of the marked field tables."""
    out, place = {}, None
    for item in blocks_and_markers(text):
        if item[0] == "marker":
            kind, value = item[1]
            place = value if kind == "fields" else None
        elif item[0] == "table" and place:
            for row in item[1]:
                for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", row[0] if row else ""):
                    out.setdefault(place, {})[name.split(".")[-1]] = item[2]
            place = None
        elif item[0] == "fence":
            place = None
    return out


def check_fields(repo):
    schema = json.load(open(os.path.join(repo, "schema/recipe.schema.json")))
    places = schema_places(schema)
    text = open(os.path.join(repo, "docs/reference/recipe.md")).read()
    documented = documented_fields(text)
    code = loader_keys(repo)
    everything = set().union(*places.values(), *code.values())
    count = 0
    for place, names in sorted(places.items()):
        for name in sorted(names):
            count += 1
            if name not in documented.get(place, {}):
                fail(f"recipe.md: schema field '{name}' of '{place}' is not documented "
                     f"(no `{name}` row in a table after <!-- fields: {place} -->)")
    for place in ("step", "recipe"):
        for name in sorted(code.get(place, ())):
            if name not in documented.get(place, {}):
                fail(f"recipe.md: key '{name}' that arun accepts on a {place} is not documented "
                     f"(no `{name}` row after <!-- fields: {place} -->)")
    all_documented = {n for names in documented.values() for n in names}
    for name in sorted(code["anywhere"]):
        if name not in all_documented:
            fail(f"recipe.md: key '{name}' that arun's loader accepts is not documented in any field table")
    for place, names in documented.items():
        for name, line in names.items():
            if name not in everything:
                fail(f"recipe.md:{line}: '{name}' (in the table of '{place}') is no field the schema or arun knows")
    print(f"fields: {count} schema properties in {len(places)} places, "
          f"{sum(len(v) for v in code.values())} loader keys checked")


# ---------------------------------------------------------------- 2. conditions

def check_condition_names(repo):
    builtins = open(os.path.join(repo, "src/engine/condition/builtins.cpp")).read()
    parser = open(os.path.join(repo, "src/engine/condition/parser.cpp")).read()
    tables = {}
    for table in ("functions", "methods"):
        m = re.search(table + r"\s*=\s*\{\{(.*?)\}\};", builtins, re.S)
        tables[table] = re.findall(r'\{"(\w+)",', m.group(1)) if m else []
        if not tables[table]:
            fail(f"could not read the {table} table of builtins.cpp (did it move?)")
    m = re.search(r"types\s*=\s*\{\{(.*?)\}\};", parser, re.S)
    types = re.findall(r'\{"(\w+)",', m.group(1)) if m else []
    if not types:
        fail("could not read isinstance's type names in parser.cpp (did they move?)")
    text = open(os.path.join(repo, "docs/reference/conditions.md")).read()
    documented = {"functions": [], "methods": []}  # the rows of the two marked tables
    marker = None
    for item in blocks_and_markers(text):
        if item[0] == "marker":
            marker = item[1][1] if item[1][0] == "check" and item[1][1] in documented else None
        elif item[0] == "table" and marker:
            documented[marker] += item[1]
            marker = None
        else:
            marker = None
    for table in documented:
        if not documented[table]:
            fail(f"conditions.md: no table after <!-- check: {table} -->")
    functions = [row[0] for row in documented["functions"] if row]
    methods = [row[0] for row in documented["methods"] if row]
    for name in tables["functions"]:
        if not any(re.search(r"`" + re.escape(name) + r"\(", c) for c in functions):
            fail(f"conditions.md: function {name}() has no row in the functions table (first cell `{name}(...)`)")
    for name in tables["methods"]:
        if not any(re.search(r"`\w+\." + re.escape(name) + r"\(", c) for c in methods):
            fail(f"conditions.md: method .{name}() has no row in the methods table (first cell `s.{name}(...)`)")
    isinstance_rows = " ".join(" | ".join(row) for row in documented["functions"] if row and "isinstance(" in row[0])
    for name in types:
        if f"`{name}`" not in isinstance_rows:
            fail(f"conditions.md: isinstance type name `{name}` is not in the row of isinstance()")
    print(f"conditions: {len(tables['functions'])} functions, {len(tables['methods'])} methods, "
          f"{len(types)} type names checked")


# ---------------------------------------------------------------- 3. examples

def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def value_text(v):
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def check_examples(arun, repo, page, work):
    path = os.path.join(repo, "docs/reference", page)
    text = open(path).read()
    folder = os.path.join(work, page.replace(".md", ""))
    os.makedirs(folder)
    sessions = os.path.join(work, "sessions")
    items = list(blocks_and_markers(text))
    recipes, names = [], {}
    # first pass: write every complete recipe as NAME.yaml
    pending = {}
    for item in items:
        if item[0] == "marker" and item[1][0] == "check":
            kind, _, rest = item[1][1].partition(" ")
            pending[kind] = rest
            continue
        if item[0] == "fence":
            info, body, line = item[1], item[2], item[3]
            if info in ("yaml", "yml"):
                try:
                    doc = yaml.safe_load(body)
                except yaml.YAMLError as e:
                    if "invalid" not in pending:
                        fail(f"{page}:{line}: the yaml block does not parse: {e}")
                    doc = None
                if isinstance(doc, dict) and "name" in doc and ("steps" in doc or "stages" in doc):
                    name = str(doc["name"])
                    if name in names:
                        fail(f"{page}:{line}: recipe name '{name}' is used by the example at line {names[name]} too")
                    names[name] = line
                    file = os.path.join(folder, name + ".yaml")
                    with open(file, "w") as out:
                        out.write(body + "\n")
                    recipes.append({"file": file, "line": line, "invalid": "invalid" in pending,
                                    "args": shlex.split(pending.get("args", "")), "checks": []})
                elif "condition-context" in pending:
                    if not isinstance(doc, dict):
                        fail(f"{page}:{line}: the condition context is not a mapping")
                    recipes.append({"context": doc or {}, "line": line})
                elif "invalid" in pending:
                    fail(f"{page}:{line}: a block marked invalid is not a complete recipe")
            elif "output" in pending or "error" in pending:
                kind = "output" if "output" in pending else "error"
                target = next((r for r in reversed(recipes) if "file" in r), None)
                if target is None:
                    fail(f"{page}:{line}: <!-- check: {kind} --> follows no recipe")
                else:
                    target["checks"].append((kind, body, line))
            pending = {}
            continue
        if item[0] == "table" and "conditions" in pending:
            context = next((r["context"] for r in reversed(recipes) if "context" in r), None)
            check_condition_table(arun, page, item[1], item[2], context, work)
        pending = {}
    common = ["--agent-cli", "fake", "--allow-missing-agents", "-R", folder]
    validated = 0
    for r in (r for r in recipes if "file" in r):
        where = f"{page}:{r['line']}"
        v = run([arun, "validate", r["file"], "--output-format", "json"] + common + r["args"], cwd=folder)
        validated += 1
        if r["invalid"]:
            if v.returncode != 2:
                fail(f"{where}: the example marked invalid passes arun validate (exit {v.returncode})")
            continue
        if v.returncode != 0:
            try:
                messages = [f"{d['line']}:{d['column']}: {d['message']}"
                            for d in json.loads(v.stdout)["diagnostics"] if d["severity"] == "error"]
            except (ValueError, KeyError):
                messages = [v.stdout + v.stderr]
            fail(f"{where}: the example fails arun validate (exit {v.returncode}): " + "; ".join(messages))
            continue
        for kind, expected, line in r["checks"]:
            res = run([arun, r["file"], "-q", "--output-format", "json", "--no-input",
                       "--session-dir", sessions] + common + r["args"], cwd=folder)
            try:
                result = json.loads(res.stdout)
            except ValueError:
                fail(f"{page}:{line}: no JSON result from running the example (exit {res.returncode}): {res.stderr}")
                continue
            if kind == "output":
                got = value_text(result.get("output"))
                if res.returncode != 0 or got != expected.rstrip("\n"):
                    fail(f"{page}:{line}: the example's output differs (exit {res.returncode}, "
                         f"error {result.get('error')!r}):\n--- documented\n{expected}\n--- actual\n{got}")
            else:
                got = result.get("error") or ""
                if res.returncode != 1 or expected.strip() not in got:
                    fail(f"{page}:{line}: the example's error differs (exit {res.returncode}):\n"
                         f"--- documented\n{expected.strip()}\n--- actual\n{got}")
    return validated


def check_condition_table(arun, page, rows, line, context, work):
    if context is None:
        fail(f"{page}:{line}: a conditions table without a <!-- check: condition-context --> block before it")
        return
    cases = []
    for row in rows:
        if len(row) < 2:
            continue
        m = re.fullmatch(r"`(.*)`", row[0])
        if not m or row[1].strip("` ") not in ("true", "false", "error"):
            fail(f"{page}:{line}: conditions table row {row!r} is not `condition` | true/false/error")
            continue
        cases.append((m.group(1), row[1].strip("` ")))
    steps = [{"id": f"c{i}", "command": "true", "condition": c} for i, (c, _) in enumerate(cases)]
    file = os.path.join(work, f"conditions-{line}.yaml")
    with open(file, "w") as out:
        yaml.safe_dump({"name": "conditions", "context": context, "steps": steps}, out, sort_keys=False)
    res = run([arun, file, "--dry-run", "--output-format", "json", "--lenient"], cwd=work)
    try:
        verdicts = [s["verdict"] for s in json.loads(res.stdout)["steps"]]
    except (ValueError, KeyError):
        fail(f"{page}:{line}: the conditions of the table do not load: {res.stdout}{res.stderr}")
        return
    meaning = {"runs": "true", "skipped": "false", "error": "error"}
    for (condition, expected), verdict in zip(cases, verdicts):
        got = meaning.get(verdict, verdict)
        if got != expected:
            fail(f"{page}:{line}: condition `{condition}` is documented as {expected}, arun says {got}")
    print(f"{page}: {len(cases)} conditions of the table at line {line} checked")


# ---------------------------------------------------------------- 4. links

def check_links(repo):
    base = os.path.join(repo, "docs/reference")
    for page in PAGES:
        text = open(os.path.join(base, page)).read()
        text_outside_code = re.sub(r"```.*?```", "", text, flags=re.S)
        text_outside_code = re.sub(r"`[^`\n]*`", "", text_outside_code)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text_outside_code):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                fail(f"{page}: link {target} leaves the repository")
                continue
            file, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(base, file)) if file else os.path.join(base, page)
            if not path.startswith(os.path.normpath(repo) + os.sep):
                fail(f"{page}: link {target} leaves the repository")
                continue
            if not os.path.exists(path):
                fail(f"{page}: link {target}: {os.path.relpath(path, repo)} does not exist")
                continue
            if anchor and path.endswith(".md") and anchor not in anchors(open(path).read()):
                fail(f"{page}: link {target}: no heading with the anchor #{anchor}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arun", required=True)
    ap.add_argument("--repo", required=True)
    args = ap.parse_args()
    arun, repo = os.path.abspath(args.arun), os.path.abspath(args.repo)
    check_fields(repo)
    check_condition_names(repo)
    check_links(repo)
    with tempfile.TemporaryDirectory(prefix="arun-reference-") as work:
        env_home = os.path.join(work, "home")
        os.makedirs(env_home)
        os.environ["HOME"] = env_home  # no recipe, agent or setting of the user's can interfere
        for name in list(os.environ):
            if name.startswith(("ARUN_", "XDG_")) or name == "NO_COLOR":
                del os.environ[name]
        os.environ["API_TOKEN"] = "example-token-value"
        for page in PAGES:
            n = check_examples(arun, repo, page, work)
            print(f"{page}: {n} example recipes validated")
    if failures:
        print(f"{len(failures)} problem(s) in the reference", file=sys.stderr)
        return 1
    print("the reference matches the code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
