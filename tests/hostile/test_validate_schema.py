"""Hostile input for `tfjob validate`'s schema check (issue 35 item 4): the whole TFJob checked
against the CRD's structural schema (src/api/structural_schema.h) and, with --local, against what
`tfjob run` needs (src/local/local_rules.h). Each case: the exact clear error, the exit code, and
a bound on the peak memory; the time is recorded, never asserted (conftest.py).
"""
import json

from conftest import run_measured

ENTRY = "validate schema"
MAX_RSS = 192
C0 = "spec.tfReplicaSpecs[Worker].template.spec.containers"


def job(containers, name="h"):
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": containers}}}}}}


def write(tmp_path, name, obj):
    path = tmp_path / name
    path.write_text(json.dumps(obj, separators=(",", ":")))
    return str(path)


def test_validate_schema_a_huge_list_of_bad_items_is_bounded(tfjob, tmp_path):
    # 100,000 containers whose `command` is a string: 100 errors shown, the rest counted.
    n = 100_000
    f = write(tmp_path, "many.json", job([{"name": f"c{i}", "image": "x", "command": "run"} for i in range(n)]))
    r = run_measured([tfjob, "validate", f], ENTRY, f"{n} containers with a string command", max_rss_mib=MAX_RSS)
    lines = r.stderr.splitlines()
    assert (r.returncode, r.stdout, len(lines)) == (1, "", 101)
    assert lines[0] == f'{f}: {C0}[0].command: Invalid value: "run": must be of type array'
    assert lines[-1] == f"{f}: {n - 100} more errors not shown"


def test_validate_schema_a_7mib_value_is_cut_short(tfjob, tmp_path):
    cpu = "9" * (7 << 20) + "x"
    f = write(tmp_path, "cpu.json", job([{"name": "tensorflow", "image": "x", "resources": {"limits": {"cpu": cpu}}}]))
    r = run_measured([tfjob, "validate", f], ENTRY, "a 7 MiB quantity that is not one", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.startswith(f'{f}: {C0}[0].resources.limits[cpu]: Invalid value: "{"9" * 64}"... '
                               f"({len(cpu)} bytes): should match '^(\\+|-)?"), r.stderr[:300]
    assert len(r.stderr) < 600


def test_validate_schema_unknown_fields_at_every_level_are_bounded(tfjob, tmp_path):
    container = {"name": "tensorflow", "image": "x", "livenessProbe": {"exec": {f"k{i}": 1 for i in range(100_000)}}}
    f = write(tmp_path, "unknown.json", job([container]))
    r = run_measured([tfjob, "validate", "--strict", f], ENTRY, "100,000 unknown fields in a probe",
                     max_rss_mib=MAX_RSS)
    lines = r.stderr.splitlines()
    assert (r.returncode, r.stdout, len(lines)) == (1, "", 101)
    assert lines[0] == f'{f}: {C0}[0].livenessProbe.exec.k0: unknown field "k0"'
    assert lines[-1] == f"{f}: 99900 more unknown fields not shown"


def test_validate_schema_duplicate_list_keys_in_a_huge_list(tfjob, tmp_path):
    # 100,000 env entries with one name: the list-map key check is one pass over a set.
    env = [{"name": "A", "value": str(i)} for i in range(100_000)]
    f = write(tmp_path, "env.json", job([{"name": "tensorflow", "image": "x", "env": env}]))
    r = run_measured([tfjob, "validate", f], ENTRY, "100,000 env entries of one name", max_rss_mib=MAX_RSS)
    lines = r.stderr.splitlines()
    assert (r.returncode, len(lines)) == (1, 101)
    assert lines[0] == f'{f}: {C0}[0].env[1]: Duplicate value: {{"name":"A"}}'


def test_validate_local_is_bounded_too(tfjob, tmp_path):
    n = 100_000
    names = ["tensorflow"] + [f"c{i}" for i in range(1, n)]
    f = write(tmp_path, "nocommand.json", job([{"name": name, "image": "x"} for name in names]))
    r = run_measured([tfjob, "validate", "--local", f], ENTRY, f"{n} containers without a command (--local)",
                     max_rss_mib=MAX_RSS)
    lines = r.stderr.splitlines()
    assert (r.returncode, r.stdout, len(lines)) == (1, "", 101)
    assert lines[0].startswith(f"{f}: {C0}[0].command: Required value: a local run executes")
    assert lines[-1] == f"{f}: {n - 100} more errors not shown"
