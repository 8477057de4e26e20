"""Body of scripts/check-size (run with the python of scripts/lizard-venv)."""
import pathlib
import sys

import lizard

MAX_LINES = 80       # physical lines, from the signature to the closing brace
MAX_COMPLEXITY = 15  # cyclomatic complexity (lizard's CCN): more is allowed up to, not over, it
# Parsers: one branch per grammar case is what they are; they are fuzzed (make test-fuzz) instead.
PARSERS = {
    "src/api/manifest.cc",       # YAML reader: scalar resolution, events, emitter
    "src/api/time.cc",           # RFC 3339 timestamps
    "src/api/quantity.cc",       # Kubernetes quantities
    "src/api/field_error.cc",    # Go %q quoting of text
    "src/api/tfjob_json.cc",     # TFJob decoder
    "src/api/pod_json.cc",       # Pod/Service decoders
    "src/api/known_fields.cc",   # the unknown-field walk of the schema
    "src/kube/watch_decoder.cc", # watch stream framing
    "src/kube/kube_config.cc",   # kubeconfig reader
    "src/cli/cli_args.cc",       # the cluster commands' arguments and durations
}
EXCEPTIONS = pathlib.Path("scripts/size-exceptions.txt")


def measured():
    for path in sorted(pathlib.Path("src").rglob("*")):
        rel = path.as_posix()
        if path.suffix not in (".cc", ".h") or path.name.endswith("_test.cc"):
            continue
        if rel.startswith(("src/fuzz/", "src/testing/")):
            continue
        for f in lizard.analyze_file(rel).function_list:
            yield rel, f


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
    over, excused = [], set()
    for rel, f in funcs:
        if f.length <= MAX_LINES and f.cyclomatic_complexity <= MAX_COMPLEXITY:
            continue
        if rel in PARSERS:
            continue
        key = (rel, f.name)
        if key in allowed:
            excused.add(key)
            continue
        over.append((rel, f))
    print(f"check-size: {len(funcs)} functions in src/ (tests, fuzzers and src/testing not counted); "
          f"limits {MAX_LINES} lines, complexity {MAX_COMPLEXITY}; parsers exempt: {len(PARSERS)} files")
    print("the 10 largest functions (lines, NLOC, complexity):")
    for rel, f in sorted(funcs, key=lambda rf: (-rf[1].length, rf[0]))[:10]:
        mark = " (parser)" if rel in PARSERS else " (exception)" if (rel, f.name) in allowed else ""
        print(f"  {f.length:5d} {f.nloc:5d} {f.cyclomatic_complexity:4d}  {rel}:{f.start_line} {f.name}{mark}")
    print(f"{len(excused)} function(s) over the limits excused by {EXCEPTIONS}")
    for key in sorted(set(allowed) - excused):
        print(f"{EXCEPTIONS}: {key[0]} {key[1]}: stale (within the limits now, or gone): drop the line")
    for rel, f in over:
        print(f"{rel}:{f.start_line}: {f.name}: {f.length} lines, complexity {f.cyclomatic_complexity} "
              f"(limits {MAX_LINES}, {MAX_COMPLEXITY}): split it, or list it in {EXCEPTIONS} with a reason")
    stale = set(allowed) - excused
    if over or stale:
        print(f"check-size: FAILED ({len(over)} over the limits, {len(stale)} stale exception(s))")
        return 1
    print("check-size: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
