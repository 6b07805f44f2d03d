#!/usr/bin/env python3
"""Which translation units clang-tidy has to look at, and the record of those it found clean.

A full clang-tidy run takes most of CI's time budget (about 30 minutes on 2 cores for ~300
translation units), while a change touches a handful. A translation unit's findings depend only
on its inputs: its compile command, the text of the source and of every project header it
includes (generated protobuf headers too), and the checks. This script keys each translation unit
of compile_commands.json by a sha256 over exactly those inputs, with the header list taken from
the build's own dependency records (`ninja -t deps`), and keeps the keys of the units found clean
in a file of the repository (.ci/tidy-clean). `./dev verify` tidies only units whose key is not
recorded, and records every key after a clean run. A unit whose dependencies the build does not
know (never built) is always tidied; a different clang-tidy, .clang-tidy or set of extra
arguments invalidates the whole record (its `config` line).

  tidy_cache.py select ROOT BUILD RECORD CONFIG   print the files to tidy, one per line
  tidy_cache.py record ROOT BUILD RECORD CONFIG   write RECORD with every unit's current key

CONFIG is a string naming everything else the findings depend on (the checks file's hash, the
clang-tidy version, the extra arguments): `./dev` builds it.
"""

import hashlib
import json
import os
import re
import subprocess
import sys

OURS = re.compile(r"^(agent|fleetctl|lib|proto|tests)/")


def file_digest(path, cache):
    if path not in cache:
        try:
            with open(path, "rb") as f:
                cache[path] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            cache[path] = "missing"
    return cache[path]


def ninja_deps(build):
    """object path (relative to BUILD) -> list of absolute dependency paths."""
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], check=True, capture_output=True,
                         text=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            current = line.split(":", 1)[0]
            # STALE records (the source changed since the object was built) still name the
            # headers of the last build: a changed source changes the key anyway.
            deps[current] = []
        elif current is not None:
            deps[current].append(os.path.normpath(os.path.join(build, line.strip())))
    return deps


def units(root, build):
    """(relative source path, key) for every translation unit of ours; key None when unknown."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    deps = ninja_deps(build)
    cache = {}
    result = []
    for entry in commands:
        source = os.path.normpath(entry["file"])
        rel = os.path.relpath(source, root)
        if not OURS.match(rel):
            continue
        command = entry["command"]
        match = re.search(r"\s-o\s+(\S+)", command)
        headers = deps.get(match.group(1)) if match else None
        if not headers:
            result.append((rel, None))
            continue
        h = hashlib.sha256()
        # -Werror only turns GCC's warnings into errors (./dev test builds with it, ./dev build
        # without), -g only says how much debug information to emit, and -O how hard to optimize
        # (the tests are built with -Og after the build type's -O2): none changes what clang-tidy
        # reports in our code (__OPTIMIZE__ only selects inline variants in system headers).
        command = re.sub(r"\s(-Werror|-g[0-9]?|-O[0-3sgz]?)(?=\s)", "", command)
        h.update(command.replace(build, "@BUILD@").replace(root, "@ROOT@").encode())
        for dep in sorted(set(headers) | {source}):
            if dep.startswith(build + os.sep):
                name = "@BUILD@/" + os.path.relpath(dep, build)
            elif dep.startswith(root + os.sep):
                name = os.path.relpath(dep, root)
            else:
                continue  # system headers: fixed by the distribution's packages
            h.update(b"\0" + name.encode() + b"\0" + file_digest(dep, cache).encode())
        result.append((rel, h.hexdigest()))
    return result


def read_record(path, config):
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return set()
    body = [line for line in lines if line and not line.startswith("#")]
    if not body or body[0] != "config " + config:
        return set()
    return {line.split()[0] for line in body[1:]}


def main(argv):
    if len(argv) != 6 or argv[1] not in ("select", "record"):
        sys.stderr.write(__doc__)
        return 2
    verb, root, build, record, config = argv[1], *map(os.path.realpath, argv[2:5]), argv[5]
    current = units(root, build)
    if verb == "select":
        clean = read_record(record, config)
        todo = [rel for rel, key in current if key is None or key not in clean]
        sys.stderr.write(f"clang-tidy: {len(todo)} of {len(current)} translation units changed "
                         f"since their last clean run ({os.path.relpath(record, root)})\n")
        print("\n".join(todo))
        return 0
    lines = ["# Translation units clang-tidy found clean, keyed by their inputs (the compile",
             "# command, the source and every project header it includes, the checks): written by",
             "# ./dev verify after a clean run, read by the next one to skip them",
             "# (scripts/tidy_cache.py).",
             "config " + config]
    lines += [f"{key} {rel}" for rel, key in sorted(current, key=lambda u: u[0]) if key]
    text = "\n".join(lines) + "\n"
    try:
        with open(record) as f:
            if f.read() == text:
                return 0
    except OSError:
        pass
    with open(record + ".tmp", "w") as f:
        f.write(text)
    os.replace(record + ".tmp", record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
