"""`tfjob dashboard` and `tfjob run --dashboard` in a real browser (headless Chromium over the
DevTools protocol, tests/e2e/browser.py) against the test cluster and the real operator
(docs/dashboard.md): the list updates when a job is created and when it ends; a job's page shows
one bar per attempt after restarts, with the exit code on hover; logs stream; hostile strings (an
event's message, an annotation, a replica's output) stay text; suspend works with --allow-actions
and is refused without it; a local run serves the same page while tfjob keeps two threads.
Screenshots go to build/dashboard-artifacts/."""
import json
import os
import subprocess
import time
import uuid

import pytest

from browser import Browser
from conftest import ROOT, OperatorProcess, wait_for

TFJOB = os.path.join(ROOT, "build", "release", "tfjob")
ARTIFACTS = os.path.join(ROOT, "build", "dashboard-artifacts")
XSS_IMG = '<img src=x onerror="window.__xss=1">'
XSS_SCRIPT = "<script>window.__xss=2</script>"


@pytest.fixture(scope="module")
def operator(kube, tfjob_crd):
    op = OperatorProcess(kube, "--workers", "4").start()
    yield op
    assert op.stop() == 0, "the operator did not stop cleanly on SIGTERM"


@pytest.fixture(scope="module")
def browser():
    with Browser(ARTIFACTS) as b:
        yield b


class Dashboard:
    def __init__(self, kube, namespace, *args):
        self.log = open(os.path.join(ARTIFACTS, f"dashboard-{namespace}.log"), "ab")
        self.proc = subprocess.Popen([TFJOB, "dashboard", "--kubeconfig", kube.kubeconfig, "-n", namespace,
                                      "--address", "127.0.0.1:0", *args],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("tfjob dashboard: serving http://127.0.0.1:"), line
        self.url = line.split()[3]

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(15)
        self.log.close()
        return rc


@pytest.fixture
def dashboard(kube, namespace, operator):
    os.makedirs(ARTIFACTS, exist_ok=True)
    d = Dashboard(kube, namespace)
    yield d
    assert d.stop() == 0


def tfjob(name, replicas=1, annotations=None, restart_policy="Never", run_policy=None, job_annotations=None):
    template = {"metadata": {"annotations": annotations or {}},
                "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1"}]}}
    spec = {"tfReplicaSpecs": {"Worker": {"replicas": replicas, "restartPolicy": restart_policy, "template": template}}}
    if run_policy:
        spec["runPolicy"] = run_policy
    meta = {"name": name}
    if job_annotations:
        meta["annotations"] = job_annotations
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": meta, "spec": spec}


def ends(code, run_for="2s"):
    return {"tfjob.test/exit-code": str(code), "tfjob.test/run-for": run_for}


def row_state(b, name):
    return b.js(f"(() => {{ const a = [...document.querySelectorAll('#jobs tr')]"
                f".find(tr => tr.querySelector('td.name').textContent === {json.dumps(name)});"
                " return a ? a.querySelector('.badge').textContent : null; })()")


def no_injected_markup(b):
    """Nothing a hostile string carried became markup or ran."""
    assert b.js("document.querySelectorAll('img, script:not([src])').length") == 0
    assert b.js("window.__xss === undefined")


def test_the_list_updates_when_a_job_is_created_and_when_it_ends(kube, namespace, dashboard, browser):
    browser.open(dashboard.url)
    browser.wait("document.querySelector('#live.ok')", what="the page to be live")
    assert row_state(browser, "first") is None
    kube.apply(tfjob("first", 2, ends(0, "6s")), namespace)
    browser.wait("document.querySelector('#jobs tr')", what="the new job's row")
    assert browser.js("document.querySelector('#jobs td.ns').textContent") == namespace
    browser.wait(f"{json.dumps(['Running'])}.includes((() => {{ const b = document.querySelector('#jobs .badge');"
                 " return b && b.textContent; })())", timeout=60, what="the row Running")
    browser.screenshot("list-running.png")
    browser.wait("document.querySelector('#jobs .badge').textContent === 'Succeeded'", timeout=90,
                 what="the row Succeeded")
    assert "Worker" in browser.text("#jobs")
    browser.screenshot("list.png")


def test_the_job_page_shows_one_bar_per_attempt_and_streams_logs(kube, namespace, dashboard, browser):
    kube.apply(tfjob("retry", 1, ends(137, "2s"), restart_policy="ExitCode", run_policy={"backoffLimit": 2}), namespace)
    kube.apply(tfjob("logs", 2, ends(0, "30s")), namespace)
    browser.open(f"{dashboard.url}job?ns={namespace}&name=retry")
    # Three attempts of worker-0, each a pod of its own (exit 137 is retried twice), then Failed.
    browser.wait("document.querySelectorAll('.bar.o-failed, .bar.o-deleted').length >= 3", timeout=120,
                 what="three ended attempts")
    browser.wait("document.querySelector('.titlerow .badge').textContent === 'Failed'", timeout=60)
    bars = browser.js("[...document.querySelectorAll('.bar')].map(b => b.getAttribute('class'))")
    assert len(bars) == 3, bars
    assert browser.js("new Set([...document.querySelectorAll('.bar title')].map(t => t.textContent)).size") == 3
    browser.hover(".bar.o-failed")
    tip = browser.wait("!document.querySelector('#tooltip').hidden && document.querySelector('#tooltip').innerText")
    assert "exit code 137" in tip and "worker-0" in tip and "node " in tip, tip
    assert "TFJobRestarting" in browser.text("table.events")
    assert "backoffLimit: 2" in browser.js("document.querySelector('#yaml').textContent")
    browser.screenshot("job-retry.png")
    # Logs stream: every replica's lines, prefixed as `tfjob logs` prefixes them.
    browser.open(f"{dashboard.url}job?ns={namespace}&name=logs")
    for w in ("worker-0", "worker-1"):
        browser.wait(f"document.querySelector('#logs').textContent.includes('[{w}] step 1: loss=0.9')", timeout=90,
                     what=f"{w}'s log")
    browser.wait("document.querySelectorAll('.bar.o-running').length === 2", timeout=30)
    browser.hover(".bar.o-running")
    browser.screenshot("job.png")


def test_hostile_strings_stay_text(kube, namespace, dashboard, browser):
    kube.apply(tfjob("xss", 1, job_annotations={"note": XSS_IMG + XSS_SCRIPT}), namespace)
    job = wait_for(lambda: kube.get("tfjob", "xss", namespace, check=False), what="the job")
    kube.apply({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "xss-" + uuid.uuid4().hex[:6]},
                "involvedObject": {"kind": "TFJob", "name": "xss", "namespace": namespace, "uid": job["metadata"]["uid"],
                                   "apiVersion": "kubeflow.org/v1"},
                "type": "Warning", "reason": "Hostile", "message": XSS_IMG + " " + XSS_SCRIPT,
                "lastTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "count": 1}, namespace)
    browser.open(f"{dashboard.url}job?ns={namespace}&name=xss")
    browser.wait("document.querySelector('table.events') && "
                 f"document.querySelector('table.events').textContent.includes({json.dumps(XSS_IMG)})",
                 what="the event's message as text")
    assert XSS_SCRIPT in browser.text("table.events")
    assert XSS_IMG in browser.js("document.querySelector('#yaml').textContent")
    no_injected_markup(browser)
    browser.screenshot("job-xss.png")


def test_suspend_with_allow_actions_and_refused_without(kube, namespace, dashboard, operator, browser):
    kube.apply(tfjob("held", 1), namespace)
    # Without --allow-actions: no buttons, and the server refuses the request itself.
    browser.open(f"{dashboard.url}job?ns={namespace}&name=held")
    browser.wait("document.querySelector('.titlerow')")
    assert browser.js("document.querySelector('#act-suspend')") is None
    refused = browser.js("fetch('/api/config').then(r => r.json()).then(c => fetch('/api/action', {method: 'POST',"
                         " headers: {'Content-Type': 'application/json', 'X-Tfjob-Csrf': c.csrf},"
                         f" body: JSON.stringify({{action: 'suspend', ns: {json.dumps(namespace)}, name: 'held'}})}}))"
                         ".then(r => r.status)")
    assert refused == 403
    assert not kube.get("tfjob", "held", namespace)["spec"].get("runPolicy", {}).get("suspend")
    # With it: the button, a confirmation, then the job suspended.
    d = Dashboard(kube, namespace, "--allow-actions")
    try:
        browser.open(f"{d.url}job?ns={namespace}&name=held")
        browser.wait("document.querySelector('#act-suspend')")
        browser.click("#act-suspend")
        browser.wait("!document.querySelector('#modal').hidden")
        assert f"Suspend TFJob {namespace}/held?" in browser.text("#modal-text")
        browser.screenshot("confirm.png", full_page=False)
        browser.click("#modal-ok")
        wait_for(lambda: kube.get("tfjob", "held", namespace)["spec"].get("runPolicy", {}).get("suspend") is True,
                 what="spec.runPolicy.suspend true")
        browser.wait("document.querySelector('#act-resume')", what="the page to show the job suspended")
        browser.wait("document.querySelector('#why') && document.querySelector('#why').textContent.includes('suspend')")
        browser.screenshot("job-suspended.png")
    finally:
        assert d.stop() == 0


def test_tfjob_run_dashboard_serves_the_same_page_with_two_threads(tmp_path, browser):
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "local"},
           "spec": {"tfReplicaSpecs": {
               "Worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [{
                   "name": "tensorflow", "image": "unused",
                   "command": ["sh", "-c", f"echo '{XSS_IMG}'; echo '{XSS_SCRIPT}'; echo step 1; "
                                           "if mkdir $TMP_MARK 2>/dev/null; then exit 3; fi; sleep 60"],
                   # The first replica to get here fails once (mkdir is atomic); the rest run.
                   "env": [{"name": "TMP_MARK", "value": str(tmp_path / "mark")}]}]}}}}}}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    proc = subprocess.Popen([TFJOB, "run", str(path), "--dashboard"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("tfjob: dashboard at http://127.0.0.1:"), line
        url = line.split()[3]
        browser.open(url)
        browser.wait("document.querySelector('#logs').textContent.includes('step 1')", timeout=60)
        browser.wait(f"document.querySelector('#logs').textContent.includes({json.dumps(XSS_IMG)})")
        assert XSS_SCRIPT in browser.js("document.querySelector('#logs').textContent")
        no_injected_markup(browser)
        # One replica failed once (exit 3) and was restarted: a failed bar and running ones.
        browser.wait("document.querySelectorAll('.bar.o-failed').length === 1 && "
                     "document.querySelectorAll('.bar.o-running').length === 2", timeout=60)
        browser.hover(".bar.o-failed")
        assert "exit code 3" in browser.wait("document.querySelector('#tooltip').innerText")
        # tfjob run itself: the runner's loop and the signal waiter, nothing else (the server runs in
        # a child process).
        assert len(os.listdir(f"/proc/{proc.pid}/task")) == 2
        browser.screenshot("run-dashboard.png")
        browser.open(url.split("job?")[0])
        browser.wait("document.querySelector('#jobs .badge')")
        assert browser.js("document.querySelector('#jobs td.ns').textContent") == "local"
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
