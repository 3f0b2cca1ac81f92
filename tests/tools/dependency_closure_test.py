#!/usr/bin/env python3
"""tools/install-deps asks apt for nothing arun does not use (docs/building.md, "What gets installed").

For `--build` and for the whole set, apt resolves what it would install on an empty Debian 12
system: `apt-get --simulate` with a status file that lists no package, so the answer depends on
the package lists alone, not on this machine, and needs no root. The test fails
- on a package outside the checked-in allowlists (tests/data/deps/closure-build.txt for
  `--build`, plus closure-test.txt for the whole set), naming the requested packages that pull it in;
- on any package valijson's Debian package brought (tests/data/deps/denied-valijson.txt: Qt,
  Poco and its database clients, Mesa, Vulkan, the other JSON libraries), which arun keeps out
  by unpacking valijson's headers alone, and on the -dev packages of the DENIED pattern, whatever
  the allowlists say;
- when an allowlisted package is no longer needed (the list would hide a later return).
Exit 77 (skipped) when apt has no package lists.

Usage: dependency_closure_test.py --install-deps tools/install-deps --lists tests/data/deps
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# The closure libvalijson-dev brought (Qt 5 and its X11, Mesa, Vulkan, DRM and Wayland
# libraries, LLVM 15 for Mesa, Poco and the database clients, the other JSON libraries) and
# other -dev packages no part of arun uses. Runtime libraries the build's own tools link
# (cmake's libjsoncpp25, ccache's libhiredis0.14) stay allowed.
DENIED = re.compile(r"^(libvalijson-dev|qt.*|libqt.*|libpoco.*|.*mariadb.*|.*mysql.*|libpq.*|.*odbc.*|"
                    r"libmongo.*|libhiredis-dev|.*redis.*-dev|libvulkan.*|.*mesa.*|libgl1.*|libgl-dev|libegl.*|libgles.*|"
                    r"libglx.*|libglu.*|libglapi.*|libdrm.*|libwayland.*|libllvm15|libx11-dev|libxcb.*-dev|"
                    r"libjsoncpp-dev|rapidjson-dev|picojson-dev|nlohmann-json3-dev|libsqlite3-dev|libssl-dev|"
                    r"zlib1g-dev|libpcre3-dev)$")

failures = []


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f"\n     {detail}"), flush=True)
    if not ok:
        failures.append(what)


def closure(packages, status):
    """The packages apt would install for `packages` on a system with nothing installed."""
    r = subprocess.run(["apt-get", "--simulate", "-o", f"Dir::State::status={status}", "install",
                        "--no-install-recommends", *packages],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"apt-get --simulate install {' '.join(packages)} failed: {r.stderr.strip()}")
    return {line.split()[1] for line in r.stdout.splitlines() if line.startswith("Inst ")}


def allowlist(path):
    names = set()
    for line in open(path, encoding="utf-8"):
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(name)
    return names


def requested(install_deps, *args):
    r = subprocess.run([install_deps, "--list", *args], stdout=subprocess.PIPE, text=True, check=True)
    return r.stdout.split()


def explain(names, packages, status):
    """Each name with the requested packages that pull it in (one simulation per requested
    package, and only when something is wrong)."""
    print("     unexpected: " + ", ".join(names), flush=True)
    closures = {p: closure([p], status) for p in packages}
    return "; ".join(f"{n} (pulled in by {', '.join(p for p in packages if n in closures[p])})" for n in names)


def check_set(label, packages, allowed, denied_names, status):
    got = closure(packages, status)
    print(f"     {label}: {len(packages)} requested, {len(got)} in the closure", flush=True)
    check(len(got) > len(packages) // 2, f"{label}: apt resolved the closure ({len(got)} packages)")
    denied = sorted(n for n in got if DENIED.match(n) or n in denied_names)
    check(not denied, f"{label}: nothing of the denylist enters the closure",
          denied and explain(denied, packages, status))
    extra = sorted(got - allowed)
    check(not extra, f"{label}: every package of the closure is in the allowlist",
          extra and "not allowed: " + explain(extra, packages, status)
          + ". Add one to tests/data/deps only with the reason arun needs it.")
    return got


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--install-deps", required=True)
    p.add_argument("--lists", required=True, help="folder of closure-build.txt and closure-test.txt")
    args = p.parse_args()

    targets = subprocess.run(["apt-get", "indextargets"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
    if targets.returncode != 0 or "Packages" not in targets.stdout:
        print("skip: apt has no package lists (run apt-get update)")
        return 77

    build_allowed = allowlist(os.path.join(args.lists, "closure-build.txt"))
    test_allowed = allowlist(os.path.join(args.lists, "closure-test.txt"))
    denied_names = allowlist(os.path.join(args.lists, "denied-valijson.txt"))
    build = requested(args.install_deps, "--build")
    everything = requested(args.install_deps)
    check("libvalijson-dev" not in everything, "install-deps asks apt for no libvalijson-dev")
    check(set(build) <= set(everything), "the whole set includes --build")

    with tempfile.NamedTemporaryFile() as empty:
        got_build = check_set("--build", build, build_allowed, denied_names, empty.name)
        got_all = check_set("the whole set", everything, build_allowed | test_allowed, denied_names, empty.name)
    stale = sorted((build_allowed - got_build) | (test_allowed - got_all))
    check(not stale, "every allowlisted package is still needed",
          "remove from tests/data/deps: " + ", ".join(stale))
    overlap = sorted(build_allowed & test_allowed)
    check(not overlap, "closure-test.txt repeats nothing of closure-build.txt", ", ".join(overlap))
    contradicted = sorted((build_allowed | test_allowed) & denied_names)
    check(not contradicted, "no allowlisted package is one valijson's Depends brought", ", ".join(contradicted))

    print(f"{len(failures)} failure(s)" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
