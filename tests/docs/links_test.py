#!/usr/bin/env python3
"""The manual stays inside the repository: every Markdown link in README.md, CHANGELOG.md,
docs/ and recipes/ points at a file of the repository that exists (and, with #anchor, at a
heading it has); no link goes to a web address; and no user-facing file (those, the shipped
JSON Schemas and the example recipes) names a file outside the repository (the development
notes a clone does not have: SPEC, DESIGN.md, TOOLCHAIN.md, ../shared).

Usage: links_test.py --repo REPO
"""
import argparse
import os
import re
import sys
import unicodedata

LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SPEC_CITE = re.compile(r"\bSPEC\s*§")
OUTSIDE = re.compile(r"\.\./shared|\bSPEC(?:\.md|\s*§)|\bDESIGN\.md\b|\bTOOLCHAIN\.md\b|\bSLURM\.md\b")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"`|\*", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = "".join(c for c in text if c.isalnum() or c in " -_" or unicodedata.category(c).startswith("L"))
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        in_code = False
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
            for a in re.findall(r'<a (?:name|id)="([^"]+)"', line):
                found.add(a)
        cache[path] = found
    return cache[path]


def user_files(repo):
    """Markdown the links check reads; every user-facing text file the outside check reads."""
    md, text = [], []
    for top in ("README.md", "CHANGELOG.md"):
        if os.path.exists(os.path.join(repo, top)):
            md.append(os.path.join(repo, top))
    for folder in ("docs", "recipes", "schema"):
        for root, _, files in os.walk(os.path.join(repo, folder)):
            for f in files:
                path = os.path.join(root, f)
                if f.endswith(".md"):
                    md.append(path)
                elif f.endswith((".yaml", ".yml", ".json")):
                    text.append(path)
    return md, md + text


def strip_code(text):
    """Markdown without fenced code blocks and inline code (links there are not links)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repo", required=True)
    repo = os.path.realpath(p.parse_args().repo)
    md, everything = user_files(repo)
    problems = []
    links = 0
    for path in md:
        rel = os.path.relpath(path, repo)
        body = strip_code(open(path, encoding="utf-8").read())
        for target in LINK.findall(body):
            links += 1
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                problems.append(f"{rel}: link {target} leaves the repository")
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not (dest == repo or dest.startswith(repo + os.sep)):
                problems.append(f"{rel}: link {target} points outside the repository")
            elif not os.path.exists(dest):
                problems.append(f"{rel}: link {target}: no such file")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append(f"{rel}: link {target}: {os.path.relpath(dest, repo)} has no heading #{anchor}")
    for path in everything:
        rel = os.path.relpath(path, repo)
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            m = OUTSIDE.search(line)
            if m:
                problems.append(f"{rel}:{n}: names {m.group(0)!r}, which is not in the repository: {line.strip()[:120]}")
    # Source comments cite the manual's pages, not the old spec a clone does not have.
    sources = 0
    for top in ("src", "include", "tests", "tools", "cmake"):
        for root, _, files in os.walk(os.path.join(repo, top)):
            for f in files:
                path = os.path.join(root, f)
                if path == os.path.realpath(__file__) or not f.endswith((".cpp", ".hpp", ".h", ".py", ".cmake", ".txt", ".sh")):
                    continue
                sources += 1
                for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                    if SPEC_CITE.search(line):
                        problems.append(f"{os.path.relpath(path, repo)}:{n}: cites the old spec; cite a docs/ page: {line.strip()[:120]}")
    for problem in problems:
        print(problem)
    print(f"{len(md)} Markdown files, {links} links, {len(everything)} files read for references outside the repo, "
          f"{sources} source files for citations of the old spec")
    print(f"{len(problems)} problems" if problems else "no dead link and no reference outside the repository")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
