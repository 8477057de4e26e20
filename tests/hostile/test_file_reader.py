"""Hostile input for the CLI's file reader (issue 17): the one reader behind `tfjob validate`,
`render` and `run`. Each case checks the exact clear error, the exit code (2: unreadable or
oversized input, 1: an invalid job or file) and a peak-memory bound. README, "Input rules and
limits", has the rules these cases pin down.
"""
import json
import os
import subprocess

import yaml

from conftest import run_measured

ENTRY = "file reader"
LIMIT = "input is larger than the limit of 8 MiB"
EXPANDED = "document too large (more than 32 MiB after expanding aliases)"
MAX_RSS = 128

JOB = """apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: %s}
spec:
  tfReplicaSpecs:
    Worker:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
"""


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


def alias_bomb(total_bytes):
    """Half the file one anchored string, the other half aliases of it: total_bytes of YAML that
    expand to about total_bytes**2 / 8 bytes."""
    half = total_bytes // 2
    return ('s: &s "' + "x" * half + '"\nl: [*s' + ", *s" * (half // 4) + "]\n").encode()


def test_alias_bomb_100k(tfjob, tmp_path):
    f = write(tmp_path, "bomb-100k.yaml", alias_bomb(100_000))  # ~600 MB expanded
    r = run_measured([tfjob, "validate", f], ENTRY, "alias bomb 100 KB (600 MB expanded)", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"{f}: {EXPANDED}\n")


def test_alias_bomb_1m(tfjob, tmp_path):
    f = write(tmp_path, "bomb-1m.yaml", alias_bomb(1_000_000))  # ~62 GB expanded
    r = run_measured([tfjob, "render", f], ENTRY, "alias bomb 1 MB (62 GB expanded)", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"{f}: {EXPANDED}\n")


def test_dev_zero(tfjob):
    r = run_measured([tfjob, "validate", "/dev/zero"], ENTRY, "validate /dev/zero", timeout=30, max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"/dev/zero: {LIMIT}\n")


def test_sparse_3gb_file_is_refused_before_reading(tfjob, tmp_path):
    f = str(tmp_path / "sparse.yaml")
    subprocess.run(["truncate", "-s", "3G", f], check=True)
    r = run_measured([tfjob, "validate", f], ENTRY, "3 GB sparse file", timeout=30, max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"{f}: {LIMIT}\n")


def test_stdin_over_the_limit_and_a_job_on_stdin(tfjob):
    r = run_measured([tfjob, "validate", "-"], ENTRY, "stdin: 9 MiB pipe", stdin=b"#" * (9 << 20),
                     max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"-: {LIMIT}\n")
    ok = run_measured([tfjob, "validate", "-"], ENTRY, "stdin: a valid job", stdin=(JOB % "piped").encode(),
                      max_rss_mib=MAX_RSS)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "-: TFJob piped is valid\n", "")


def test_just_under_the_limit_is_read(tfjob, tmp_path):
    job = (JOB % "big").encode()
    f = write(tmp_path, "padded.yaml", job + b"#" * ((8 << 20) - len(job) - 1) + b"\n")
    assert os.path.getsize(f) == 8 << 20
    r = run_measured([tfjob, "validate", f], ENTRY, "8 MiB file (exactly the limit)", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{f}: TFJob big is valid\n", "")


def test_deep_nesting(tfjob, tmp_path):
    f = write(tmp_path, "deep.yaml", "a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    r = run_measured([tfjob, "validate", f], ENTRY, "nesting 100,000 levels", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"{f}: line 1, column 259: nesting deeper than 256 levels\n")
    j = write(tmp_path, "deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    r = run_measured([tfjob, "validate", j], ENTRY, "JSON nesting 100,000 levels", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"{j}: invalid JSON: nesting deeper than 256 levels\n")


def test_huge_single_line(tfjob, tmp_path):
    job = yaml.safe_load(JOB % "oneline")
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"] = ["x" * (7 << 20)]
    f = write(tmp_path, "oneline.json", json.dumps(job))
    r = run_measured([tfjob, "validate", f], ENTRY, "one 7 MiB line (JSON)", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{f}: TFJob oneline is valid\n", "")


def test_many_documents(tfjob, tmp_path):
    n = 200_000
    f = write(tmp_path, "many.yaml", "kind: ConfigMap\n---\n" * n + JOB % "last")
    r = run_measured([tfjob, "validate", f], ENTRY, f"{n} ConfigMaps and a TFJob", max_rss_mib=MAX_RSS)
    assert r.returncode == 0
    assert r.stdout == f"{f}: TFJob last is valid\n"
    lines = r.stderr.splitlines()
    assert len(lines) == 101
    assert lines[0] == f'{f}: warning: document 1 (line 1): skipped: kind "ConfigMap" is not TFJob'
    assert lines[-1] == f"{f}: warning: {n - 100} more documents skipped"
    empty = write(tmp_path, "empty-docs.yaml", "---\n" * (1 << 20))
    r = run_measured([tfjob, "validate", empty], ENTRY, "1 Mi empty documents", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stderr) == (1, f"{empty}: no TFJob found: the file has no documents\n")


def test_control_characters_in_names_are_escaped(tfjob, tmp_path):
    f = write(tmp_path, "escapes.yaml", JOB % '"x\\e[2J\\e]0;pwned\\a\\u202eabc\\u2066"')
    r = run_measured([tfjob, "validate", f], ENTRY, "terminal escapes and bidi in a name", max_rss_mib=MAX_RSS)
    assert r.returncode == 1
    assert r.stderr.startswith(f'{f}: metadata.name: Invalid value: "x\\x1b[2J\\x1b]0;pwned\\a\\u202eabc\\u2066": '
                               "should match: a DNS-1035 label"), r.stderr
    for raw in ("\x1b", "\x07", "\u202e", "\u2066"):
        assert raw not in r.stderr
    key = write(tmp_path, "key.yaml", (JOB % "k").replace("Worker:", '"W\\e[31m\\u202e":'))
    r = run_measured([tfjob, "validate", key], ENTRY, "terminal escapes in a replica type", max_rss_mib=MAX_RSS)
    assert r.returncode == 1
    assert r.stderr.startswith(f'{key}: spec.tfReplicaSpecs[W\\x1b[31m\\u202e]: Unsupported value: '
                               '"W\\x1b[31m\\u202e": supported values: "Chief"'), r.stderr
    assert "\x1b" not in r.stderr and "\u202e" not in r.stderr


def test_kind_typo_next_to_a_valid_job(tfjob, tmp_path):
    f = write(tmp_path, "typo.yaml", JOB % "good" + "---\n" + (JOB % "typo").replace("kind: TFJob", "kind: TfJob"))
    r = run_measured([tfjob, "validate", f], ENTRY, "kind: TfJob next to a TFJob", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", f'{f}: document 2 (line 8): kind "TfJob" is not TFJob (kinds are case-sensitive)\n')
    other = write(tmp_path, "pytorch.yaml", (JOB % "p").replace("kind: TFJob", "kind: PyTorchJob"))
    r = run_measured([tfjob, "render", other], ENTRY, "kind: PyTorchJob (kubeflow.org)", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", f'{other}: document 1 (line 1): kind "PyTorchJob" of apiVersion "kubeflow.org/v1" is not TFJob '
               "(tfjob reads only TFJobs)\n")


def test_unknown_fields_warn_and_strict_fails(tfjob, tmp_path):
    text = (JOB % "typos").replace("    Worker:\n", "    Worker:\n      replcas: 3\n").replace(
        "spec:\n  tfReplicaSpecs", "spec:\n  runPolcy: {backoffLimit: 1}\n  tfReplicaSpecs").replace(
        "image: tf}", "image: tf, comand: [python]}")
    f = write(tmp_path, "typos.yaml", text)
    warnings = [
        'spec.runPolcy: unknown field "runPolcy"',
        'spec.tfReplicaSpecs[Worker].replcas: unknown field "replcas"',
        'spec.tfReplicaSpecs[Worker].template.spec.containers[0].comand: unknown field "comand"',
    ]
    r = run_measured([tfjob, "validate", f], ENTRY, "unknown fields", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout) == (0, f"{f}: TFJob typos is valid\n")
    assert r.stderr == "".join(f"{f}: warning: {w}\n" for w in warnings)
    r = run_measured([tfjob, "validate", "--strict", f], ENTRY, "unknown fields --strict", max_rss_mib=MAX_RSS)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "".join(f"{f}: {w}\n" for w in warnings)


def test_render_yaml_reads_back_with_pyyaml(tfjob, tmp_path):
    job = yaml.safe_load(JOB % "chars")
    odd = "a\u2028b\u2029c\u0085d\x7fe\u00a0f\ufeffg\x1bh\u202ei"
    tmpl = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    tmpl["metadata"] = {"labels": {"l": odd}, "annotations": {"k\u2028ey": odd}}
    tmpl["spec"]["containers"][0].update(args=[odd, "\x7f", "\u0085"], env=[{"name": "A", "value": odd}])
    f = write(tmp_path, "chars.json", json.dumps(job))
    as_json = run_measured([tfjob, "render", f, "-o", "json"], ENTRY, "render -o json, U+2028/NEL/DEL",
                           max_rss_mib=MAX_RSS)
    as_yaml = run_measured([tfjob, "render", f, "-o", "yaml"], ENTRY, "render -o yaml, U+2028/NEL/DEL",
                           max_rss_mib=MAX_RSS)
    assert as_json.returncode == 0 and as_yaml.returncode == 0, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
    assert json.loads(as_json.stdout)["items"][0]["spec"]["containers"][0]["args"][0] == odd


def test_render_yaml_noncharacters_yaml11_words_and_long_numbers(tfjob, tmp_path):
    """What yaml-cpp's writer got wrong (U+FFFE/U+FFFF written as U+FFFD: render_fuzzer), what a
    YAML 1.1 reader such as PyYAML or kubectl's takes for a boolean, number or date, and long
    number-like strings (a 400 KB one overflowed the stack of the first regex-based check)."""
    job = yaml.safe_load(JOB % "nonchars")
    values = ["\uffff", "a\ufffeb", "x: \U0001ffff", "\x01\U0001ffff", "yes", "on", "N", "1_000", "0b101", "1:30",
              "2024-01-02", ".nan", "<<", "1_" * 200_000, "2024-01-01T" + "x" * 300_000]
    tmpl = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    tmpl["metadata"] = {"annotations": {f"k{i}\uffff": v for i, v in enumerate(values)}}
    tmpl["spec"]["containers"][0].update(args=values)
    f = write(tmp_path, "nonchars.json", json.dumps(job))
    as_json = run_measured([tfjob, "render", f, "-o", "json"], ENTRY, "render -o json, noncharacters",
                           max_rss_mib=MAX_RSS)
    as_yaml = run_measured([tfjob, "render", f, "-o", "yaml"], ENTRY, "render -o yaml, noncharacters",
                           max_rss_mib=MAX_RSS)
    assert as_json.returncode == 0 and as_yaml.returncode == 0, as_yaml.stderr[-2000:]
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
    assert json.loads(as_json.stdout)["items"][0]["spec"]["containers"][0]["args"] == values
