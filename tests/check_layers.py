#!/usr/bin/env python3
"""Fails when a file includes a layer it may not use (docs/architecture.md section 1), when the pure
core (src/tfjob/core) reaches for the clock, the environment, files, threads or the network, or
when production code uses the test doubles of src/testing (only *_test.cc files and the test-only
`testing` library may; in src/CMakeLists.txt only tests may list tfjob::testing)."""
import pathlib
import re
import sys

ALLOWED = {
    "common": {"common"},
    "api": {"api", "common"},
    "tfjob/core": {"tfjob/core", "api", "common"},
    "kube": {"kube", "api", "common"},
    "controller": {"controller", "kube", "api", "common"},
    "operator": {"operator", "controller", "kube", "tfjob/core", "api", "common"},
    "local": {"local", "tfjob/core", "api", "common"},
    # Every command of `tfjob` (one CLI11 tree): the cluster commands, a client of the API with
    # the local runner's replica view; `run` (local); `operator` (operator's RunOperator).
    "cli": {"cli", "operator", "controller", "kube", "local", "tfjob/core", "api", "common"},
    # Test doubles and fixtures: built only with the tests, linked only into them.
    "testing": {"testing", "operator", "local", "controller", "kube", "tfjob/core", "api", "common"},
}
OURS = ("common", "api", "tfjob", "kube", "controller", "operator", "local", "cli", "cmd", "testing", "fuzz")
IMPURE_INCLUDES = {"fstream", "iostream", "thread", "filesystem", "curl/curl.h", "common/clock.h",
                   "common/logging.h", "testing/fake_clock.h"}
IMPURE_CALLS = re.compile(r"\b(getenv|system_clock::now|steady_clock::now|fopen|std::cout|std::cerr)\b")


def layer_of(rel: str):
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if rel.startswith(layer + "/"):
            return layer
    return None


def cmake_problems(cmake: pathlib.Path):
    """A production target (library or binary) listing tfjob::testing in its DEPS."""
    if not cmake.exists():
        return []
    problems = []
    text = cmake.read_text(encoding="utf-8")
    for m in re.finditer(r"\b(tfjob_cc_library|tfjob_cc_binary)\(NAME\s+(\w+)([^)]*)\)", text):
        kind, name, body = m.groups()
        if name == "testing":
            continue
        if re.search(r"\btfjob::testing\b", body):
            problems.append(f"src/CMakeLists.txt: {kind}({name}) may not depend on tfjob::testing "
                            "(test doubles are for tests only)")
    return problems


def main(src: pathlib.Path) -> int:
    problems = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        rel = path.relative_to(src).as_posix()
        layer = layer_of(rel)
        if layer is None:
            continue
        is_test = rel.endswith("_test.cc")
        text = path.read_text(encoding="utf-8")
        for inc in re.findall(r'#include\s+[<"]([^>"]+)[>"]', text):
            top = inc.split("/")[0]
            if top not in OURS:
                if layer == "tfjob/core" and not is_test and inc in IMPURE_INCLUDES:
                    problems.append(f"{rel}: the pure core may not include <{inc}>")
                continue
            target = layer_of(inc) or top
            if is_test and target == "testing":
                continue
            if target not in ALLOWED[layer]:
                problems.append(f"{rel}: layer '{layer}' may not include \"{inc}\"")
            if layer == "tfjob/core" and not is_test and inc in IMPURE_INCLUDES:
                problems.append(f"{rel}: the pure core may not include \"{inc}\"")
        if layer == "tfjob/core" and not is_test:
            for m in IMPURE_CALLS.finditer(text):
                problems.append(f"{rel}: the pure core may not call {m.group(1)}")
    problems += cmake_problems(src / "CMakeLists.txt")
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))
