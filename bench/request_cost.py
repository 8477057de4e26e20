#!/usr/bin/env python3
"""What one request costs the API server (issue 15): the CPU seconds of kube-apiserver and etcd
for N requests of one kind, sent by 16 threads in a fresh test cluster with no operator. Prints
figures, asserts nothing. The kinds are those of a burst of small TFJobs: the user's TFJob
creates, the operator's status merge patches on /status, and its pod and service creates (their
later costs, the scheduler's binding and KWOK's status writes, are not counted here: only the
request itself). bench/README.md uses it to account for the operator's run against the limit.

Usage (after make build and make control-plane):

  bench/request_cost.py [--jobs 200] [--patches 400] [--children 200] [--watchers 0] [--owned]

--watchers K opens K sets of full watches of the namespace's pods, services and TFJobs (what the
operator watches) for all the runs: with K=1 as the bench's own watches, K=2 as the bench's and
the operator's, the difference is what serving one more watcher costs the API server.
--owned gives the pods and services the owner reference the operator writes (their TFJob,
controller, blockOwnerDeletion); without it they have none, as the limit's.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import operator_bench as ob  # noqa: E402 - the bench's cluster, workloads and CPU readers


class KeepAlive:
    """One HTTPS connection per thread, kept open (as the operator's and limit_client's are), so
    that no request pays a TLS handshake."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.local = threading.local()
        self.host = urllib.parse.urlsplit(cluster.server)

    def send(self, method, path, body, content_type="application/json"):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection(self.host.hostname, self.host.port,
                                                                 context=self.cluster.ctx, timeout=60)
        conn.request(method, path, body=json.dumps(body), headers={"Content-Type": content_type})
        r = conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {data[:200]!r}")


def timed(cluster, fn, items, threads=16):
    """(seconds, apiserver+etcd CPU seconds, machine busy share) of fn over items."""
    cp0, machine, t0 = ob.control_plane_cpu(cluster), ob.MachineCpu(), time.time()
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        list(ex.map(fn, items))
    return time.time() - t0, ob.control_plane_cpu(cluster) - cp0, machine.busy()


def status_patch(client, ns, name, i):
    """A merge patch of a TFJob's status like the operator's (a condition and replica counts)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    body = {"status": {"conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated",
                                       "message": f"TFJob {name} is created.", "lastUpdateTime": now,
                                       "lastTransitionTime": now}],
                       "replicaStatuses": {"PS": {"active": i % 2}, "Worker": {"active": i % 5}}, "startTime": now}}
    client.send("PATCH", f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/{name}/status", body,
                "application/merge-patch+json")


def owned(obj, uids):
    """obj with the owner reference the operator writes: its TFJob (by the job-name label), whose
    uid `uids` gives by name."""
    job = obj["metadata"]["labels"]["training.kubeflow.org/job-name"]
    obj = json.loads(json.dumps(obj))
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": job,
                                           "uid": uids[job], "controller": True, "blockOwnerDeletion": True}]
    return obj


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=200, help="TFJobs created (and patched)")
    ap.add_argument("--patches", type=int, default=400, help="status patches, spread over the TFJobs")
    ap.add_argument("--children", type=int, default=200, help="pods created, then services created")
    ap.add_argument("--watchers", type=int, default=0,
                    help="sets of full watches of the namespace's pods, services and TFJobs open meanwhile")
    ap.add_argument("--owned", action="store_true", help="children with their TFJob as owner, as the operator's")
    a = ap.parse_args()
    rows = []
    with ob.Cluster(nodes=max(4, a.children // 50 + 2)) as cluster:
        ns = cluster.namespace("cost")
        jobs = ob.burst_jobs(ns, a.jobs)
        children = ob.rendered_children(jobs[:max(1, a.children // 5 + 1)], ns)
        pods = [o for o in children if o["kind"] == "Pod"][:a.children]
        services = [o for o in children if o["kind"] == "Service"][:a.children]
        del children
        client = KeepAlive(cluster)
        watches = [ob.Watch(cluster, path, lambda *_: None) for _ in range(a.watchers)
                   for path in (f"/api/v1/namespaces/{ns}/pods", f"/api/v1/namespaces/{ns}/services",
                                f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs")]
        # Warm-up: the first requests of a kind in a fresh API server are slower (not counted).
        warm = [ob.small_job(f"warm-{i}", ns) for i in range(20)]
        timed(cluster, lambda j: client.send("POST", f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs", j), warm)
        runs = [
            ("TFJob create", jobs, lambda j: client.send("POST", f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs", j)),
            ("TFJob status merge patch", range(a.patches),
             lambda i: status_patch(client, ns, f"burst-{i % a.jobs}", i)),
            ("pod create", pods, lambda o: client.send("POST", f"/api/v1/namespaces/{ns}/pods", o)),
            ("service create", services, lambda o: client.send("POST", f"/api/v1/namespaces/{ns}/services", o)),
        ]
        for name, items, fn in runs:
            items = list(items)
            if a.owned and name in ("pod create", "service create"):  # the TFJobs exist by now
                uids = {j["metadata"]["name"]: j["metadata"]["uid"]
                        for j in cluster.request(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs")["items"]}
                items = [owned(o, uids) for o in items]
            seconds, cpu, busy = timed(cluster, fn, items)
            rows.append((name, len(items), seconds, cpu, busy))
            ob.log(f"{name}: {len(items)} in {seconds:.2f} s, apiserver+etcd {cpu:.2f} s CPU, machine busy {busy:.0%}")
            time.sleep(8)  # the scheduler, KWOK and the controllers catch up before the next kind
        for w in watches:
            w.stopped = True
    ob.print_header("what a request costs the API server")
    ob.Printer().table("What one request costs the API server (16 threads on kept-alive connections, a fresh cluster, "
                       f"no operator, {a.watchers} set(s) of watches of the namespace's pods, services and TFJobs, "
                       f"children {'owned by their TFJob' if a.owned else 'without owner'})",
                       ["request", "requests", "seconds", "apiserver+etcd CPU (s)", "CPU ms per request",
                        "machine busy"],
                       [[name, str(n), ob.fmt(s, ".2f"), ob.fmt(c, ".2f"), ob.fmt(1000 * c / n if n else None, ".1f"),
                         ob.fmt(b, ".0%")] for name, n, s, c, b in rows])


if __name__ == "__main__":
    main()
