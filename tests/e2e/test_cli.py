"""End-to-end tests of the cluster commands (`tfjob submit|get|describe|logs|suspend|resume|delete`,
docs/cli.md) against the test cluster with the real operator: exit codes of submit --wait, the
plain change lines off a terminal and the live table on one (tmux), Ctrl-C, get/describe output
(a suspended and an unschedulable job), suspend/resume/delete, pod logs (KWOK's kubelet server
serves DIR/pod.log for every container, see scripts/test-cluster) and `kubectl tfjob` through
the plugin link."""
import json
import os
import re
import signal
import subprocess
import time
import uuid

import pytest

from conftest import ROOT, OperatorProcess, wait_for

TFJOB = os.path.join(ROOT, "build", "release", "tfjob")


@pytest.fixture(scope="module")
def operator(kube, tfjob_crd):
    op = OperatorProcess(kube, "--workers", "4").start()
    yield op
    assert op.stop() == 0, "the operator did not stop cleanly on SIGTERM"


def job(name, replicas=None, annotations=None, run_policy=None, resources=None):
    container = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1"}
    if resources:
        container["resources"] = resources
    template = {"metadata": {"annotations": annotations or {}}, "spec": {"containers": [container]}}
    spec = {"tfReplicaSpecs": {"Worker": {"replicas": replicas or 1, "restartPolicy": "Never", "template": template}}}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": spec}


def ends(code, run_for="2s"):
    return {"tfjob.test/exit-code": str(code), "tfjob.test/run-for": run_for}


def write(kube, obj):
    path = os.path.join(kube.dir, f"cli-{uuid.uuid4().hex[:8]}.json")
    with open(path, "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def tfjob(kube, ns, *args, timeout=90, binary=TFJOB, env=None):
    cmd = [binary] + list(args) + ["--kubeconfig", kube.kubeconfig] + (["-n", ns] if ns else [])
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)


def test_submit_wait_succeeds_with_logs_and_plain_lines(kube, namespace, operator):
    r = tfjob(kube, namespace, "submit", write(kube, job("ok", 2, ends(0, "3s"))), "--wait", "--follow",
              "--timeout", "60s")
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == f"TFJob {namespace}/ok created"
    # Not a terminal: plain lines when something changes, no escape sequences.
    assert "\x1b" not in r.stdout
    # Its change to Running; or, when the pod ran before the first list (KWOK starts it at once;
    # seen under load), the pod first seen Running.
    assert any(re.fullmatch(r"tfjob: ok-worker-0: (Pending -> )?Running( \(node .*\))?", l) for l in out), out
    # Worker 0's exit 0 ends the job (worker 1 may still run then).
    assert "tfjob: ok-worker-0: Running -> Succeeded (exit code 0)" in out
    assert any(l.startswith(f"tfjob: TFJob {namespace}/ok conditions: Created=True, Running=True") for l in out)
    # --follow: every replica's log, prefixed as tfjob run prefixes it (KWOK serves DIR/pod.log).
    for w in ("worker-0", "worker-1"):
        assert [l for l in out if l.startswith(f"[{w}]")] == [
            f"[{w}] step 1: loss=0.9", f"[{w}] step 2: loss=0.5", f"[{w}] training done"], out
    assert out[-1] == f"TFJob {namespace}/ok Succeeded: TFJob {namespace}/ok successfully completed."
    # The final table, as tfjob run prints it, with the node.
    assert out[-4].split() == ["REPLICA", "STATE", "RESTARTS", "EXIT", "CODE", "RUN", "TIME", "NODE"], out[-4:]
    # The scheduler picks the node: the column shows the one the pod was bound to.
    node = kube.get("pod", "ok-worker-0", namespace)["spec"]["nodeName"]
    assert out[-3].split()[:4] == ["ok-worker-0", "Succeeded", "0", "0"] and out[-3].split()[-1] == node, (node, out)


def test_submit_wait_fails_with_exit_1(kube, namespace, operator):
    r = tfjob(kube, namespace, "submit", write(kube, job("bad", 1, ends(3, "1s"))), "--wait")
    print(r.stdout, r.stderr)
    assert r.returncode == 1, r.stderr
    assert "tfjob: bad-worker-0: Running -> Failed (exit code 3)" in r.stdout.splitlines()
    assert r.stdout.splitlines()[-1] == (f"TFJob {namespace}/bad Failed: TFJob {namespace}/bad has failed "
                                         "because 1 Worker replica(s) failed.")


def test_submit_timeout_is_124_and_the_job_keeps_running(kube, namespace, operator):
    r = tfjob(kube, namespace, "submit", write(kube, job("long")), "--wait", "--timeout", "3s")
    assert r.returncode == 124, (r.stdout, r.stderr)
    assert r.stdout.splitlines()[-1] == f"tfjob: timed out after 3s waiting for TFJob {namespace}/long (it keeps running)"
    assert kube.get("tfjob", "long", namespace)["metadata"]["name"] == "long"


def test_submit_shows_the_servers_warnings_and_refusals(kube, namespace, operator):
    j = job("warn")
    j["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["comand"] = ["x"]
    r = tfjob(kube, namespace, "submit", write(kube, j))
    assert r.returncode == 0, r.stderr
    assert 'Warning: unknown field "spec.tfReplicaSpecs.Worker.template.spec.containers[0].comand"' in r.stderr
    r = tfjob(kube, namespace, "submit", write(kube, j))
    assert r.returncode == 1
    assert f"tfjob: TFJob {namespace}/warn already exists" in r.stderr
    bad = job("typed")
    bad["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "two"
    r = tfjob(kube, namespace, "submit", write(kube, bad))
    assert r.returncode == 1 and "spec.tfReplicaSpecs.Worker.replicas" in r.stderr, r.stderr


def test_unreachable_server_is_exit_2_naming_it(kube, tmp_path):
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
           "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
           "contexts": [{"name": "x", "context": {"cluster": "c", "namespace": "team"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(cfg))
    f = write(kube, job("x"))
    for args in (["submit", f, "--wait"], ["get"], ["describe", "x"]):
        r = subprocess.run([TFJOB] + args, env=dict(os.environ, KUBECONFIG=f"/nonexistent:{path}"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert r.returncode == 2, (args, r.stderr)
        assert f"tfjob: cannot reach the API server https://127.0.0.1:9 (kubeconfig {path} context x)" in r.stderr
        # The context's namespace ("team") is the default one.
        assert "/namespaces/team/tfjobs" in r.stderr, r.stderr


def test_get_describe_suspend_resume_delete(kube, namespace, operator):
    assert tfjob(kube, namespace, "submit", write(kube, job("s", 2, run_policy={"suspend": True}))).returncode == 0
    wait_for(lambda: "Suspended" in tfjob(kube, namespace, "get", "s").stdout, what="Suspended")
    r = tfjob(kube, namespace, "get")
    assert r.returncode == 0
    rows = r.stdout.splitlines()
    assert rows[0].split() == ["NAME", "STATE", "AGE", "REPLICAS", "RESTARTS"]
    assert rows[1].split()[:2] == ["s", "Suspended"] and rows[1].split()[3:] == ["Worker", "0/2", "0"], rows
    d = tfjob(kube, namespace, "describe", "s")
    print(d.stdout)
    assert d.returncode == 0
    assert ("Why not running: TFJob s is suspended (spec.runPolicy.suspend is true): `tfjob resume s` starts it"
            in d.stdout.splitlines())
    assert "Suspended=True" in d.stdout
    j = json.loads(tfjob(kube, namespace, "get", "s", "-o", "json").stdout)
    assert j["kind"] == "TFJob" and "managedFields" not in j["metadata"]
    assert tfjob(kube, namespace, "get", "-o", "yaml").stdout.startswith("apiVersion: v1\nitems:")
    r = tfjob(kube, namespace, "resume", "s")
    assert r.returncode == 0 and r.stdout == f"TFJob {namespace}/s resumed\n"
    wait_for(lambda: "Running" == tfjob(kube, namespace, "get", "s").stdout.splitlines()[1].split()[1], what="Running")
    assert tfjob(kube, namespace, "suspend", "s").stdout == f"TFJob {namespace}/s suspended\n"
    wait_for(lambda: kube.get("pods", None, namespace)["items"] == [], what="the pods deleted on suspend")
    assert tfjob(kube, namespace, "suspend", "s").stdout == f"TFJob {namespace}/s is already suspended\n"
    r = tfjob(kube, namespace, "delete", "s", "--wait")
    assert r.returncode == 0 and r.stdout == f"TFJob {namespace}/s deleted\n"
    r = tfjob(kube, namespace, "get", "s")
    assert r.returncode == 1 and r.stderr == f"tfjob: TFJob {namespace}/s not found\n"
    assert tfjob(kube, namespace, "delete", "s").returncode == 1


def test_describe_unschedulable_names_the_schedulers_message(kube, namespace, operator):
    tfjob(kube, namespace, "submit", write(kube, job("big", 1, resources={"requests": {"cpu": "1000"}})))
    def why():
        out = tfjob(kube, namespace, "describe", "big").stdout
        return [l for l in out.splitlines() if l.startswith("Why not running:") and "unschedulable" in l]
    line = wait_for(why, what="the unschedulable sentence")[0]
    assert line.startswith("Why not running: TFJob big is not running: pod big-worker-0 is unschedulable: "
                           "0/4 nodes are available: 4 Insufficient cpu."), line
    out = tfjob(kube, namespace, "describe", "big").stdout
    assert "FailedScheduling" in out and "Pod/big-worker-0" in out  # the pod's events
    # Its timeline: pending (dots, never running) since it was created. The bar starts at the
    # pod's create, one column later when the pod's second is after the job's (seen under load).
    assert re.search(r"^  big-worker-0  [ .]*\.[ .]*  created \+", out, re.M), out


def test_logs_merged_one_replica_type_previous(kube, namespace, operator):
    tfjob(kube, namespace, "submit", write(kube, job("lg", 2)))
    wait_for(lambda: len([p for p in kube.get("pods", None, namespace)["items"]
                          if p["status"].get("phase") == "Running"]) == 2, what="2 running pods")
    r = tfjob(kube, namespace, "logs", "lg")
    assert r.returncode == 0, r.stderr
    # Merged by time across the replicas (both files have the same timestamps), each prefixed.
    assert r.stdout.splitlines() == ["[worker-0] step 1: loss=0.9", "[worker-1] step 1: loss=0.9",
                                     "[worker-0] step 2: loss=0.5", "[worker-1] step 2: loss=0.5",
                                     "[worker-0] training done", "[worker-1] training done"]
    r = tfjob(kube, namespace, "logs", "lg", "--replica", "worker-1")
    assert r.stdout.splitlines() == ["[worker-1] step 1: loss=0.9", "[worker-1] step 2: loss=0.5",
                                     "[worker-1] training done"]
    assert len(tfjob(kube, namespace, "logs", "lg", "--type", "worker").stdout.splitlines()) == 6
    r = tfjob(kube, namespace, "logs", "lg", "--replica", "worker-0", "--previous")
    assert r.stdout == "[worker-0] the previous container's last words\n"
    r = tfjob(kube, namespace, "logs", "lg", "--type", "PS")
    assert r.returncode == 1 and "has no pods matching" in r.stderr


def test_kubectl_plugin_link(kube, namespace, operator, tmp_path):
    (tmp_path / "kubectl-tfjob").symlink_to(TFJOB)
    tfjob(kube, namespace, "submit", write(kube, job("plug")))
    kubectl = "kubectl"  # on PATH (tests/e2e/run sources the cluster's env)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    r = subprocess.run([kubectl, "tfjob", "get", "plug", "--kubeconfig", kube.kubeconfig, "-n", namespace], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].split()[0] == "plug"
    r = subprocess.run([kubectl, "tfjob", "get", "--help"], env=env, stdout=subprocess.PIPE, text=True, timeout=60)
    assert "Usage: kubectl tfjob get" in r.stdout


def test_interrupt_stops_watching_never_the_job(kube, namespace, operator):
    f = write(kube, job("int"))
    p = subprocess.Popen([TFJOB, "submit", f, "--wait", "--kubeconfig", kube.kubeconfig, "-n", namespace],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (kube.get("tfjob", "int", namespace, check=False) or {}).get("status", {}).get("conditions"),
             what="the job running")
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, (out, err)
    assert out.splitlines()[-1] == (f"tfjob: interrupted; stopped watching. TFJob {namespace}/int keeps running "
                                    "(`tfjob delete int` stops it)")
    assert kube.get("tfjob", "int", namespace, check=False) is not None
    f = write(kube, job("int2"))
    p = subprocess.Popen([TFJOB, "submit", f, "--wait", "--delete-on-interrupt", "--kubeconfig", kube.kubeconfig,
                          "-n", namespace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: kube.get("tfjob", "int2", namespace, check=False), what="the job created")
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 130 and "deleted (--delete-on-interrupt)" in out.splitlines()[-1], out
    wait_for(lambda: kube.get("tfjob", "int2", namespace, check=False) is None, what="int2 deleted")


def tmux_screen(session):
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], stdout=subprocess.PIPE, text=True).stdout


def test_live_table_on_a_terminal_and_ctrl_c(kube, namespace, operator):
    """The live replica table of tfjob run, fed from the cluster, on a real terminal (tmux):
    the table stays at the top, the logs scroll below it; Ctrl-C (send-keys) stops watching."""
    f = write(kube, job("tty", 2, ends(0, "6s")))
    session = "tfjob-cli-" + uuid.uuid4().hex[:6]
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "30",
                    f"{TFJOB} submit {f} --wait --follow --kubeconfig {kube.kubeconfig} -n {namespace}; "
                    "echo EXIT=$?; sleep 60"], check=True)
    try:
        def running():
            rows = tmux_screen(session).splitlines()
            return rows if len(rows) > 3 and rows[1].split()[:2] == ["tty-worker-0", "Running"] and \
                rows[2].split()[:2] == ["tty-worker-1", "Running"] else None
        rows = wait_for(running, what="the live table with both replicas Running")
        assert rows[0].split() == ["REPLICA", "STATE", "RESTARTS", "EXIT", "CODE", "RUN", "TIME", "NODE"]
        wait_for(lambda: any(l.startswith("[worker-0] training done") for l in tmux_screen(session).splitlines()[4:]),
                 what="the logs below the table")
        screen = wait_for(lambda: "EXIT=" in tmux_screen(session) and tmux_screen(session), timeout=60,
                          what="the end")
        assert "EXIT=0" in screen, screen
        assert f"TFJob {namespace}/tty Succeeded" in screen
        # Ctrl-C on the terminal: stops watching, never the job. (A second session while the first
        # one lives: killing tmux's last session ends its server, racing a new session.)
        f = write(kube, job("tty2"))
        first, session = session, "tfjob-cli-" + uuid.uuid4().hex[:6]
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "30",
                        f"{TFJOB} submit {f} --wait --kubeconfig {kube.kubeconfig} -n {namespace}; "
                        "echo EXIT=$?; sleep 60"], check=True)
        subprocess.run(["tmux", "kill-session", "-t", first])
        wait_for(lambda: "tty2-worker-0" in tmux_screen(session) and "Running" in tmux_screen(session),
                 what="tty2 running")
        subprocess.run(["tmux", "send-keys", "-t", session, "C-c"], check=True)
        screen = wait_for(lambda: "EXIT=" in tmux_screen(session) and tmux_screen(session), what="the interrupt")
        assert "EXIT=130" in screen and "keeps running" in screen, screen
        assert kube.get("tfjob", "tty2", namespace, check=False) is not None
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session])


def test_readme_quick_start_ps_worker_example(kube, namespace, operator):
    """README's quick start: examples/ps-worker.yaml to a cluster with submit --wait --follow, then
    describe. KWOK pods run until told otherwise, so worker 0 is steered to exit 0 after 2s."""
    import yaml
    with open(os.path.join(ROOT, "examples", "ps-worker.yaml")) as fh:
        docs = [d for d in yaml.safe_load_all(fh) if d]
    j = docs[0]
    del j["metadata"]["namespace"]
    for spec in j["spec"]["tfReplicaSpecs"].values():
        spec["template"].setdefault("metadata", {}).setdefault("annotations", {}).update(ends(0, "2s"))
    r = tfjob(kube, namespace, "submit", write(kube, j), "--wait", "--follow", "--timeout", "90s", timeout=120)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    name = j["metadata"]["name"]
    assert f"[worker-0] training done" in r.stdout.splitlines()
    assert r.stdout.splitlines()[-1].startswith(f"TFJob {namespace}/{name} Succeeded")
    d = tfjob(kube, namespace, "describe", name).stdout
    assert "State:       Succeeded" in d and "Why not running" not in d
