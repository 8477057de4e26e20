"""The validating admission webhook (issue 8, docs/semantics.md 1.8) through the real API server: the operator
serves it over TLS with a certificate from config/webhook/generate-cert, a
ValidatingWebhookConfiguration made from config/webhook/manifests.yaml points at it by URL on
127.0.0.1 (scoped to the test's namespace, so other suites are not affected), and `kubectl apply`
of every file in examples/invalid fails with the file's expected message while every example
passes."""
import base64
import glob
import json
import os
import socket
import subprocess
import uuid

import pytest

from conftest import ROOT, OperatorProcess, wait_for
from test_operator import container, has_condition, tfjob

WEBHOOK = "validator.tfjob.training-operator.kubeflow.org"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manifest_objects(kube, path):
    """The objects of a YAML file as JSON (kubectl converts; no YAML library needed)."""
    text, objects, decoder = kube("create", "--dry-run=client", "-o", "json", "-f", path), [], json.JSONDecoder()
    pos = 0
    while text[pos:].strip():  # one JSON object per document
        obj, end = decoder.raw_decode(text, len(text) - len(text[pos:].lstrip()))
        objects += obj["items"] if obj.get("kind") == "List" else [obj]
        pos = end
    return objects


def expected_message(path):
    with open(path) as f:
        first = f.readline()
    assert first.startswith("# expect: "), f"{path} has no '# expect:' line"
    return first[len("# expect: "):].rstrip("\n")


@pytest.fixture
def webhook(kube, namespace, tfjob_crd, tmp_path):
    certs = subprocess.run([os.path.join(ROOT, "config", "webhook", "generate-cert"), "--out", str(tmp_path),
                            "--ip", "127.0.0.1"], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    port = free_port()
    op = OperatorProcess(kube, "--namespace", namespace, "--webhook-port", str(port), "--webhook-host", "127.0.0.1",
                         "--webhook-cert-dir", certs).start()
    config_name = None
    try:
        op.port("webhook")
        [config] = [o for o in manifest_objects(kube, os.path.join(ROOT, "config", "webhook", "manifests.yaml"))
                    if o["kind"] == "ValidatingWebhookConfiguration"]
        config_name = config["metadata"]["name"] = "tfjob-validator-" + uuid.uuid4().hex[:6]
        hook = config["webhooks"][0]
        assert hook["name"] == WEBHOOK and hook["clientConfig"]["service"]["path"] == "/validate-kubeflow-org-v1-tfjob"
        with open(os.path.join(certs, "ca.crt"), "rb") as f:
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{hook['clientConfig']['service']['path']}",
                                    "caBundle": base64.b64encode(f.read()).decode()}
        hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
        kube.apply(config)
        # The API server picks up a new webhook configuration within a second or so.
        probe = tfjob("probe", {"Worker": {"template": {"spec": {"containers": []}}}})
        wait_for(lambda: WEBHOOK in kube.run("apply", "--dry-run=server", "-n", namespace, "-f", "-",
                                             stdin=json.dumps(probe), check=False).stderr,
                 timeout=30, what="the API server to call the webhook")
        yield op
    finally:
        if config_name:
            kube.run("delete", "validatingwebhookconfiguration", config_name, "--ignore-not-found", check=False)
        code = op.stop()
    assert code == 0


def apply_in(kube, namespace, obj, *extra):
    obj = dict(obj)
    obj["metadata"] = dict(obj["metadata"], namespace=namespace)
    return kube.run("apply", *extra, "-f", "-", stdin=json.dumps(obj), check=False)


@pytest.mark.every_version
def test_invalid_examples_are_denied_with_every_error(kube, namespace, webhook):
    files = sorted(glob.glob(os.path.join(ROOT, "examples", "invalid", "*.yaml")))
    assert len(files) >= 7
    for path in files:
        [obj] = manifest_objects(kube, path)
        r = apply_in(kube, namespace, obj)
        assert r.returncode != 0, f"{path} was admitted"
        want = f'admission webhook "{WEBHOOK}" denied the request: {expected_message(path)}'
        assert want in r.stderr, f"{path}:\n  got  {r.stderr.strip()}\n  want {want}"
        # `tfjob validate` reports the same errors, one per line.
        v = subprocess.run([os.path.join(ROOT, "build", "tfjob"), "validate", path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        assert v.returncode == 1
        msg = expected_message(path)
        errors = msg[1:-1].split(", spec.") if msg.startswith("[") else [msg]
        for i, e in enumerate(errors):
            assert (e if i == 0 else "spec." + e) in v.stdout, f"tfjob validate {path}: {v.stdout}"
    assert kube.get("tfjobs", None, namespace)["items"] == []
    assert webhook.metric('controller_runtime_webhook_requests_total{webhook="/validate-kubeflow-org-v1-tfjob",'
                          'code="200"}') >= len(files)


def test_valid_examples_are_admitted_and_run(kube, namespace, webhook):
    files = sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml")))
    for path in files:
        for obj in manifest_objects(kube, path):
            r = apply_in(kube, namespace, obj, "--dry-run=server")
            assert r.returncode == 0, f"{path}: {r.stderr}"
    # A real create, then the job runs as usual.
    r = apply_in(kube, namespace, tfjob("admitted", {"Worker": {"template": container()}}))
    assert r.returncode == 0, r.stderr
    wait_for(lambda: has_condition(kube, namespace, "admitted", "Running"), timeout=60, what="Running")


def test_odd_but_runnable_specs_are_admitted_with_warnings(kube, namespace, webhook):
    """Issue 14 item 3 (docs/semantics.md D22, D25): what upstream admits and runs is admitted with
    admission warnings, which kubectl prints as "Warning: ..."; what cannot run is denied."""
    w = {"template": container()}
    odd = tfjob("odd", {"Worker": w, "worker": w, "Master": w, "chief": w},
                {"cleanPodPolicy": "none", "ttlSecondsAfterFinished": -1}, successPolicy="AllWorker")
    r = apply_in(kube, namespace, odd)
    assert r.returncode == 0, r.stderr
    for warning in ['Warning: spec.runPolicy.cleanPodPolicy: unsupported value "none" (supported: "All", "None", '
                    '"Running"): treated as "All"',
                    'Warning: spec.successPolicy: unsupported value "AllWorker"',
                    "Warning: spec.runPolicy.ttlSecondsAfterFinished: negative value -1",
                    'Warning: spec.tfReplicaSpecs[worker]: "worker" and "Worker" are the same replica type',
                    'Warning: spec.tfReplicaSpecs[chief]: "chief" is read as "Chief"']:
        assert warning in r.stderr, f"missing {warning!r} in:\n{r.stderr}"
    # `tfjob validate` prints the same warnings and exits 0; --strict makes them errors.
    path = os.path.join(kube.dir, f"odd-{uuid.uuid4().hex[:6]}.json")
    with open(path, "w") as f:
        json.dump(odd, f)
    v = subprocess.run([os.path.join(ROOT, "build", "tfjob"), "validate", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert v.returncode == 0, v.stderr
    printed = [l.split(": warning: ", 1)[1] for l in v.stderr.splitlines()]
    assert printed == [l[len("Warning: "):] for l in r.stderr.splitlines() if l.startswith("Warning: ")]
    assert subprocess.run([os.path.join(ROOT, "build", "tfjob"), "validate", "--strict", path],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 1
    # Negative backoffLimit: upstream fails such a job before any pod runs; refused here (D25).
    r = apply_in(kube, namespace, tfjob("neg", {"Worker": w}, {"backoffLimit": -1}))
    assert r.returncode != 0
    assert (f'admission webhook "{WEBHOOK}" denied the request: spec.runPolicy.backoffLimit: Invalid value: -1: '
            "must be greater than or equal to 0") in r.stderr


def test_updates_keep_managed_by_immutable(kube, namespace, webhook):
    assert apply_in(kube, namespace, tfjob("upd", {"Worker": {"template": container()}})).returncode == 0
    r = kube.run("patch", "tfjob", "upd", "-n", namespace, "--type=merge", "-p",
                 '{"spec":{"runPolicy":{"managedBy":"kueue.x-k8s.io/multikueue"}}}', check=False)
    assert r.returncode != 0
    assert (f'admission webhook "{WEBHOOK}" denied the request: spec.runPolicy.managedBy: Invalid value: '
            '"kueue.x-k8s.io/multikueue": field is immutable') in r.stderr
    r = kube.run("patch", "tfjob", "upd", "-n", namespace, "--type=merge", "-p",
                 '{"spec":{"tfReplicaSpecs":{"Worker":{"template":{"spec":{"containers":[{"name":"x","image":"y"}]}}}}}}',
                 check=False)
    assert r.returncode != 0 and "must have at least one container with name tensorflow" in r.stderr
    kube("label", "tfjob", "upd", "-n", namespace, "team=ml")  # what stays valid is admitted
