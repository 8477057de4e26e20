"""Body of scripts/check-size (run with the python of scripts/lizard-venv)."""
import pathlib
import sys

import lizard

MAX_LINES = 80       # physical lines, from the signature to the closing brace
MAX_COMPLEXITY = 15  # cyclomatic complexity (lizard's CCN): more is allowed up to, not over, it
MAX_FILE_LINES = 600  # lines of a production .cc file (issue 28): a file over it is split by concern
FILE = "<file>"       # the FUNCTION column of an exception for a whole file's length
EXCEPTIONS = pathlib.Path("scripts/size-exceptions.txt")


def production_files():
    for path in sorted(pathlib.Path("src").rglob("*")):
        rel = path.as_posix()
        if path.suffix not in (".cc", ".h") or path.name.endswith("_test.cc"):
            continue
        if rel.startswith(("src/fuzz/", "src/testing/")):
            continue
        yield rel


def measured():
    for rel in production_files():
        for f in lizard.analyze_file(rel).function_list:
            yield rel, f


def long_files():
    """(path, lines) of each production .cc over MAX_FILE_LINES."""
    for rel in production_files():
        if rel.endswith(".cc"):
            n = len(pathlib.Path(rel).read_text().splitlines())
            if n > MAX_FILE_LINES:
                yield rel, n


def exceptions():
    """(path, function) -> reason; a line is `PATH FUNCTION REASON...` ('#' starts a comment)."""
    out = {}
    for n, line in enumerate(EXCEPTIONS.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            sys.exit(f"{EXCEPTIONS}:{n}: want `PATH FUNCTION REASON`, got {line!r}")
        out[(parts[0], parts[1])] = parts[2]
    return out


def main():
    funcs = list(measured())
    allowed = exceptions()
    over, over_files, excused = [], [], set()
    for rel, f in funcs:
        if f.length <= MAX_LINES and f.cyclomatic_complexity <= MAX_COMPLEXITY:
            continue
        key = (rel, f.name)
        if key in allowed:
            excused.add(key)
            continue
        over.append((rel, f))
    for rel, n in long_files():
        key = (rel, FILE)
        if key in allowed:
            excused.add(key)
            continue
        over_files.append((rel, n))
    print(f"check-size: {len(funcs)} functions in src/ (tests, fuzzers and src/testing not counted); "
          f"limits {MAX_LINES} lines, complexity {MAX_COMPLEXITY}; files {MAX_FILE_LINES} lines")
    print("the 10 largest functions (lines, NLOC, complexity):")
    for rel, f in sorted(funcs, key=lambda rf: (-rf[1].length, rf[0]))[:10]:
        mark = " (exception)" if (rel, f.name) in allowed else ""
        print(f"  {f.length:5d} {f.nloc:5d} {f.cyclomatic_complexity:4d}  {rel}:{f.start_line} {f.name}{mark}")
    print(f"{len(excused)} function(s) and file(s) over the limits excused by {EXCEPTIONS}")
    for key in sorted(set(allowed) - excused):
        print(f"{EXCEPTIONS}: {key[0]} {key[1]}: stale (within the limits now, or gone): drop the line")
    for rel, f in over:
        print(f"{rel}:{f.start_line}: {f.name}: {f.length} lines, complexity {f.cyclomatic_complexity} "
              f"(limits {MAX_LINES}, {MAX_COMPLEXITY}): split it, or list it in {EXCEPTIONS} with a reason")
    for rel, n in over_files:
        print(f"{rel}: {n} lines (limit {MAX_FILE_LINES}): split it by concern, or list it in {EXCEPTIONS} "
              f"as `{rel} {FILE} REASON`")
    stale = set(allowed) - excused
    if over or over_files or stale:
        print(f"check-size: FAILED ({len(over)} function(s) and {len(over_files)} file(s) over the limits, "
              f"{len(stale)} stale exception(s))")
        return 1
    print("check-size: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
