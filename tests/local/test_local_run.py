"""`tfjob run`: TFJobs as local processes, with the operator's rules (real processes, no cluster)."""
import json
import os
import signal
import subprocess
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# TFJOB_BIN=/path/to/tfjob runs the cases against another build (the default: this checkout's).
TFJOB = os.environ.get("TFJOB_BIN") or os.path.join(ROOT, "build", "release", "tfjob")


def run(args, timeout=60, **kw):
    return subprocess.run([TFJOB, "run"] + args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, **kw)


def job_file(tmp_path, name, replicas, run_policy=None):
    spec = {"tfReplicaSpecs": replicas}
    if run_policy:
        spec["runPolicy"] = run_policy
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": spec}))
    return str(path)


def sh(script, **replica):
    replica.setdefault("template", {"spec": {"containers": [
        {"name": "tensorflow", "image": "busybox", "command": ["sh", "-c", textwrap.dedent(script)]}]}})
    return replica


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_demo_job_succeeds_and_every_replica_finds_its_peers():
    r = run(["examples/local/linear-ps.yaml"])
    assert r.returncode == 0, r.stdout + r.stderr
    for replica in ("worker-0", "worker-1", "chief-0"):
        assert f"[{replica}] {replica}: found peers through TF_CONFIG: ps=['127.0.0.1:" in r.stdout
    for ps in ("ps-0", "ps-1"):
        assert f"[{ps}] {ps}: serving weights" in r.stdout
    assert "chief-0: converged" in r.stdout
    assert "TFJob linear Succeeded" in r.stdout


def test_exit_code_137_once_is_restarted_and_the_job_succeeds(tmp_path):
    marker = tmp_path / "crashed-once"
    f = job_file(tmp_path, "retry", {"Worker": sh(f"""
        if [ ! -e {marker} ]; then touch {marker}; kill -9 $$$$; fi  # $$ is an escaped $ in Kubernetes
        echo second attempt; exit 0""", restartPolicy="ExitCode")})
    r = run([f])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "retry-worker-0 exited with code 137" in r.stdout
    assert "TFJobRestarting: job retry is restarting because Worker replica(s) failed." in r.stdout
    assert "[worker-0] second attempt" in r.stdout
    assert "retry-worker-0               Succeeded         1" in r.stdout


def test_exit_code_1_fails_the_job_with_the_spec_message(tmp_path):
    f = job_file(tmp_path, "perm", {"Worker": sh("exit 1", restartPolicy="ExitCode")})
    r = run([f])
    assert r.returncode == 1
    assert 'TFJob perm Failed: job "perm" is failing because "Worker" replica(s) failed.' in r.stdout


def test_on_failure_with_backoff_limit_1_fails_after_the_second_failure(tmp_path):
    f = job_file(tmp_path, "flaky", {"Worker": sh("sleep 0.2; exit 3", restartPolicy="OnFailure")}, {"backoffLimit": 1})
    r = run([f])
    assert r.returncode == 1
    assert r.stdout.count("tfjob: flaky-worker-0 exited with code 3") == 2
    assert "TFJob flaky Failed: Job flaky has failed because it has reached the specified backoff limit" in r.stdout


def test_active_deadline_stops_a_job_that_runs_too_long(tmp_path):
    f = job_file(tmp_path, "slow", {"Worker": sh("sleep 60")}, {"activeDeadlineSeconds": 2})
    # Only the deadline ends the 60 s replica within the hang time-out of 45 s; how long it ran is
    # what the runner reports (its table), not what this test measured.
    r = run([f, "--grace-period", "1"], timeout=45)
    assert r.returncode == 1
    assert "Job slow has failed because it was active longer than specified deadline" in r.stdout
    row = next(line.split() for line in r.stdout.splitlines() if line.startswith("slow-worker-0 "))
    # Ended by the runner's SIGTERM (exit 143), not by itself (sleep 60 would exit 0).
    assert row[3] == "143", row
    assert float(row[-1].rstrip("s")) < 60, row


def _started_pids(proc, n, deadline=20):
    pids, end = [], time.time() + deadline
    while len(pids) < n and time.time() < end:
        line = proc.stdout.readline()
        if " started (pid " in line:
            pids.append(int(line.rsplit("pid ", 1)[1].rstrip(")\n")))
    assert len(pids) == n
    return pids


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_stopping_tfjob_run_leaves_no_process_behind(tmp_path, sig, code):
    marker = 3000 + os.getpid() % 1000 + (1 if sig == signal.SIGKILL else 0)  # `sleep <marker>` finds grandchildren
    f = job_file(tmp_path, "forever", {"PS": sh(f"trap '' TERM; sleep {marker}"),
                                       "Worker": sh(f"echo started; sleep {marker}", replicas=2)})
    proc = subprocess.Popen([TFJOB, "run", f, "--grace-period", "1"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    pids = _started_pids(proc, 3)
    time.sleep(0.5)
    proc.send_signal(sig)
    assert proc.wait(timeout=20) == code

    def leftovers():
        found = subprocess.run(["pgrep", "-f", f"sleep {marker}"], stdout=subprocess.PIPE, text=True).stdout.split()
        return [p for p in pids if alive(p)] + [int(p) for p in found if alive(int(p))]
    end = time.time() + 20  # a hang time-out: the kernel ends them at once, a loaded machine may lag
    while leftovers() and time.time() < end:
        time.sleep(0.1)
    assert leftovers() == []  # children and grandchildren, even the PS that ignores SIGTERM


@pytest.mark.parametrize("container,expected", [
    ({"name": "tensorflow", "image": "tf"},
     "spec.tfReplicaSpecs[Worker].template.spec.containers[0].command: Required value: a local run executes"),
    ({"name": "tensorflow", "image": "tf", "command": ["true"], "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]},
     "spec.tfReplicaSpecs[Worker].template.spec.containers[0].env[0].valueFrom: Unsupported value"),
    ({"name": "tensorflow", "image": "tf", "command": ["no-such-program-here"]},
     'spec.tfReplicaSpecs[Worker]: command "no-such-program-here" not found (or not executable) on this machine'),
])
def test_replicas_that_cannot_run_here_are_clear_errors(tmp_path, container, expected):
    f = job_file(tmp_path, "bad", {"Worker": {"template": {"spec": {"containers": [container]}}}})
    r = run([f])
    assert r.returncode == 2
    assert expected in r.stderr


def test_invalid_spec_is_refused_like_validate(tmp_path):
    f = job_file(tmp_path, "Bad_Name", {"Worker": sh("true", replicas=-1)})
    r = run([f])
    assert r.returncode == 1
    assert 'metadata.name: Invalid value: "Bad_Name"' in r.stderr
    assert "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1" in r.stderr


def test_pasted_template_and_odd_but_runnable_spec_run(tmp_path):
    """Issue 14 items 2 and 3: a template pasted from `kubectl get pod -o yaml` runs, and what
    upstream admits and runs (here an unknown cleanPodPolicy) is a warning on stderr, not a refusal."""
    worker = sh("echo trained; exit 0")
    worker["template"]["metadata"] = {
        "name": "trainer-abc12", "namespace": "sandbox", "uid": "9b2e4c1a-3f5d-4e6a-8b7c-0d1e2f3a4b5c",
        "resourceVersion": "4815162342", "generation": 1, "creationTimestamp": "2026-11-30T09:14:07Z",
        "selfLink": "/api/v1/namespaces/sandbox/pods/trainer-abc12", "labels": {"app": "trainer"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "trainer", "uid": "u1",
                             "controller": True}],
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1"}]}
    f = job_file(tmp_path, "pasted", {"Worker": worker}, run_policy={"cleanPodPolicy": "none"})
    r = run([f])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[worker-0] trained" in r.stdout
    assert ('warning: spec.runPolicy.cleanPodPolicy: unsupported value "none" (supported: "All", "None", '
            '"Running"): treated as "All"') in r.stderr


def test_logs_dir_and_quiet(tmp_path):
    f = job_file(tmp_path, "logged", {"Worker": sh("echo hello from the worker")})
    r = run([f, "--quiet", "--logs-dir", str(tmp_path / "logs")])
    assert r.returncode == 0
    assert "hello from the worker" not in r.stdout
    assert (tmp_path / "logs" / "logged-worker-0.log").read_text() == "hello from the worker\n"


def test_issue25_escape_sequences_are_escaped_on_the_terminal_and_kept_in_the_log(tmp_path):
    """Issue 25 item 6: as `tfjob logs` and `describe`, `tfjob run` shows a replica's control
    characters escaped (Go's %q), so a replica cannot set the title or clear the screen; the
    --logs-dir file keeps the bytes the replica wrote."""
    f = job_file(tmp_path, "esc", {"Worker": sh(r"printf 'a\033]0;title\007b\033[2J\r\n'")})
    r = run([f, "--logs-dir", str(tmp_path / "logs")])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[worker-0] a\\x1b]0;title\\ab\\x1b[2J\n" in r.stdout, r.stdout
    assert "\x1b" not in r.stdout and "\a" not in r.stdout
    assert (tmp_path / "logs" / "esc-worker-0.log").read_bytes() == b"a\x1b]0;title\x07b\x1b[2J\r\n"


def test_a_terminal_gets_a_live_table_above_the_output(tmp_path):
    f = job_file(tmp_path, "tty", {"PS": sh("echo ps ready; sleep 30"), "Worker": sh("echo working; sleep 30", replicas=2)})
    session = f"tfjob-{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "30",
                    f"cd {ROOT} && {TFJOB} run {f} --grace-period 1; sleep 5"], check=True)
    try:
        screen = ""
        for _ in range(50):
            time.sleep(0.1)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], stdout=subprocess.PIPE, text=True).stdout
            if "working" in screen and "tty-worker-1" in screen.splitlines()[3]:
                break
        rows = screen.splitlines()
        assert rows[0].split() == ["REPLICA", "STATE", "RESTARTS", "EXIT", "CODE", "RUN", "TIME"]
        assert [r.split()[:2] for r in rows[1:4]] == [["tty-ps-0", "Running"], ["tty-worker-0", "Running"],
                                                      ["tty-worker-1", "Running"]]
        assert any(line.startswith("[worker-0] working") for line in rows[5:])  # output scrolls below the table
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session])
