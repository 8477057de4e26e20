"""What the README's set-up commands build (issue 25 item 7): `make demo` runs only the tfjob
binary, so it builds only that target, not the unit tests, benchmarks or fuzzers (which made a
cold `make demo` cost 1,138 s of CPU). Read from make's dry run of this checkout's Makefile."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def dry_run(target):
    out = subprocess.run(["make", "-n", "-C", ROOT, target, "JOBS=2"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60, check=True).stdout
    return [line for line in out.splitlines() if re.search(r"\bcmake --build\b", line)]


def test_make_demo_builds_only_the_tfjob_binary():
    builds = dry_run("demo")
    assert builds, "make demo builds nothing?"
    for line in builds:
        assert re.search(r"--target tfjob\s*$", line), f"make demo builds more than tfjob: {line!r}"


def test_make_build_still_builds_everything():
    builds = dry_run("build")
    assert builds and not any("--target" in line for line in builds), builds
