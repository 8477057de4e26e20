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
    row = next(line.split() for line in r.stdout.splitlines() if line.startswith("retry-worker-0 "))
    assert row[:3] == ["retry-worker-0", "Succeeded", "1"], row


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
        assert rows[0].split() == ["REPLICA", "STATE", "RESTARTS", "EXIT", "CODE", "RUN", "TIME", "TOTAL", "TIME"]
        assert [r.split()[:2] for r in rows[1:4]] == [["tty-ps-0", "Running"], ["tty-worker-0", "Running"],
                                                      ["tty-worker-1", "Running"]]
        assert any(line.startswith("[worker-0] working") for line in rows[5:])  # output scrolls below the table
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session])


def _lines_until(proc, done, deadline=90):
    """Lines of `proc`'s stdout until done(lines) holds (or the hang time-out)."""
    lines, end = [], time.time() + deadline
    while not done(lines) and time.time() < end:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
    return lines


def test_issue35_the_typo_job_makes_at_most_3_starts_per_replica_in_its_first_25_seconds(tmp_path):
    """Issue 35 item 1: `command: [python3, trian.py]` under OnFailure without backoffLimit
    restarted 74 times per replica in 30 s. With the kubelet's back-off (the default) the first
    restart is at once and the next ones wait 10 s, then 20 s: counted from the runner's own lines
    (its starts and the back-offs it announces), not timed here."""
    replica = {"replicas": 2, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "tensorflow/tensorflow", "command": ["python3", "trian.py"]}]}}}
    f = job_file(tmp_path, "typo", {"Worker": replica})
    proc = subprocess.Popen([TFJOB, "run", f], cwd=str(tmp_path), stdout=subprocess.PIPE, text=True)
    try:
        waits = lambda lines, w: [ln for ln in lines if f"typo-{w} CrashLoopBackOff: back-off" in ln]
        # Each worker's third start, then its second back-off (20 s): Ctrl-C during that wait.
        lines = _lines_until(proc, lambda ls: all(len(waits(ls, w)) >= 2 for w in ("worker-0", "worker-1")))
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)  # at once: far sooner than the 20 s wait
        lines += out.splitlines()
    finally:
        proc.kill()
    assert proc.returncode == 130, "\n".join(lines)
    for w in ("worker-0", "worker-1"):
        starts = [ln for ln in lines if ln.startswith(f"tfjob: typo-{w} started (pid ")]
        backoffs = [ln.split("back-off ")[1].split(",")[0] for ln in waits(lines, w)]
        # Start 1 at 0 s, start 2 at once after the first failure, start 3 10 s after the second:
        # start 4 would come 20 s after the third failure, past 25 s.
        assert len(starts) == 3, "\n".join(lines)
        assert backoffs == ["10s", "20s"], backoffs
        assert f"tfjob: typo-{w} failed with exit code 2: restarted under restartPolicy OnFailure" in out + "\n".join(lines)
    row = next(ln.split() for ln in lines if ln.startswith("typo-worker-0 "))
    assert row[1:4] == ["Stopped", "3", "2"], row


def test_issue35_a_short_back_off_for_tests_and_none(tmp_path):
    f = job_file(tmp_path, "quick", {"Worker": sh("exit 3", restartPolicy="OnFailure")}, {"backoffLimit": 3})
    r = run([f, "--restart-backoff", "100ms", "--restart-backoff-max", "200ms"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.count("tfjob: quick-worker-0 started (pid ") == 4
    assert [ln.split("back-off ")[1].split(",")[0] for ln in r.stdout.splitlines() if "CrashLoopBackOff" in ln] == \
        ["100ms", "200ms"]
    r = run([f, "--restart-backoff", "0"])
    assert r.returncode == 1 and "CrashLoopBackOff" not in r.stdout
    r = run([f, "--restart-backoff", "soon"])
    assert r.returncode == 2 and '--restart-backoff: invalid duration "soon"' in r.stderr


def test_issue35_four_workers_with_a_gpu_each_get_one_device_each(tmp_path):
    """Issue 35 item 2, as the issue's acceptance: CUDA_VISIBLE_DEVICES=0,1,2,3 and four workers
    asking for nvidia.com/gpu: 1 each: each sees one device of its own."""
    up = tmp_path / "up"
    worker = sh(f"echo \"devices=$$CUDA_VISIBLE_DEVICES/$$NVIDIA_VISIBLE_DEVICES\"; echo x >> {up}", replicas=4)
    worker["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1, "memory": "8Gi"}}
    # The chief ends the job: only once every worker has printed (at most ~10 s).
    chief = sh(f"""echo "chief=[$${{CUDA_VISIBLE_DEVICES-unset}}]"
        for i in $$(seq 200); do [ -e {up} ] && [ "$$(wc -l < {up})" -ge 4 ] && break; sleep 0.05; done""")
    f = job_file(tmp_path, "mwms", {"Chief": chief, "Worker": worker}, {"cleanPodPolicy": "None"})
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0,1,2,3")
    r = run([f], env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    seen = {}
    for line in r.stdout.splitlines():
        if line.startswith("[worker-") and "devices=" in line:
            seen[line.split("]")[0][1:]] = line.split("devices=")[1]
    assert sorted(seen.values()) == ["0/0", "1/1", "2/2", "3/3"], seen
    assert "[chief-0] chief=[]" in r.stdout  # a replica without GPUs sees none, not the caller's four
    assert "note: a local run does not apply these resources: limits.memory (Worker)" in r.stdout
    table = {ln.split()[0]: ln.split() for ln in r.stdout.splitlines() if ln.startswith("mwms-")}
    assert table["mwms-worker-3"][6] == "3" and table["mwms-chief-0"][6] == "-", table


def test_issue35_too_few_gpus_is_refused_before_anything_starts_and_gpus_overrides(tmp_path):
    up = tmp_path / "up"
    # Worker 0's success ends the job: only once both have printed (at most ~10 s).
    worker = sh(f"""echo "devices=$$CUDA_VISIBLE_DEVICES"; echo x >> {up}
        for i in $$(seq 200); do [ "$$(wc -l < {up})" -ge 2 ] && break; sleep 0.05; done""", replicas=2)
    worker["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    f = job_file(tmp_path, "big", {"Worker": worker})
    r = run([f], env=dict(os.environ, CUDA_VISIBLE_DEVICES="0,1"))
    assert r.returncode == 2
    assert ("this job needs 4 GPUs (nvidia.com/gpu: 4 for 2 Worker) but this machine offers 2 (0,1), from "
            "CUDA_VISIBLE_DEVICES=0,1") in r.stderr
    assert " started (pid " not in r.stdout
    r = run([f, "--gpus", "GPU-a,GPU-b,GPU-c,GPU-d"], env=dict(os.environ, CUDA_VISIBLE_DEVICES="0,1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[worker-0] devices=GPU-a,GPU-b" in r.stdout and "[worker-1] devices=GPU-c,GPU-d" in r.stdout


def test_issue35_without_cuda_visible_devices_the_gpus_are_what_nvidia_smi_lists(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n[ \"$1\" = -L ] || exit 9\n"
                   "echo 'GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-0aa)'\n"
                   "echo 'GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-1bb)'\n")
    smi.chmod(0o755)
    worker = sh("echo \"devices=$$CUDA_VISIBLE_DEVICES\"")
    worker["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    f = job_file(tmp_path, "smi", {"Worker": worker})
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    r = run([f], env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[worker-0] devices=GPU-0aa,GPU-1bb" in r.stdout


def test_issue35_the_pid_is_the_programs_and_attempts_are_separated_in_the_logs(tmp_path):
    marker = tmp_path / "crashed-once"
    f = job_file(tmp_path, "pid", {"Worker": sh(f"""
        echo "my pid $$$$"
        if [ ! -e {marker} ]; then touch {marker}; exit 3; fi
        exit 0""", restartPolicy="OnFailure")})
    r = run([f, "--logs-dir", str(tmp_path / "logs")])
    assert r.returncode == 0, r.stdout + r.stderr
    started = [ln.rsplit("pid ", 1)[1].rstrip(")") for ln in r.stdout.splitlines() if " started (pid " in ln]
    own = [ln.rsplit(" ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith("[worker-0] my pid ")]
    assert len(started) == 2 and started == own, (started, own)
    log = (tmp_path / "logs" / "pid-worker-0.log").read_text().splitlines()
    assert log[0] == f"my pid {own[0]}" and log[2] == f"my pid {own[1]}", log
    assert log[1].startswith("----- tfjob: pid-worker-0 attempt 2 (restart 1) at "), log
    assert log[1].endswith("; attempt 1 exited with code 3 -----"), log


def test_issue35_the_summary_explains_the_failure(tmp_path):
    f = job_file(tmp_path, "perm", {"Worker": sh("exit 1", restartPolicy="ExitCode")})
    r = run([f])
    assert r.returncode == 1
    assert r.stdout.rstrip().splitlines()[-1] == (
        "  why: perm-worker-0 failed with exit code 1: exit 1 is permanent under restartPolicy ExitCode (only 128 "
        "and above, a death by a signal, is restarted); not restarted: the job fails")
    # The table's run times: the last attempt and all of them.
    header = next(ln for ln in r.stdout.splitlines() if ln.startswith("REPLICA "))
    assert "RUN TIME TOTAL TIME" in header


def test_issue35_run_help_lists_the_exit_codes():
    r = subprocess.run([TFJOB, "run", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0
    for code in ("0    the job Succeeded", "1    the job Failed", "2    cannot run here", "130  interrupted"):
        assert code in r.stdout, r.stdout
    assert "--restart-backoff" in r.stdout and "--gpus" in r.stdout
