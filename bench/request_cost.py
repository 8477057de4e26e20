#!/usr/bin/env python3
"""What one request costs the API server (issue 15): the CPU seconds of kube-apiserver and etcd
for N requests of one kind, sent by 16 threads in a fresh test cluster with no operator. Prints
figures, asserts nothing. The kinds are those of a burst of small TFJobs: the user's TFJob
creates, the operator's status merge patches on /status, and its pod and service creates (their
later costs, the scheduler's binding and KWOK's status writes, are not counted here: only the
request itself). bench/README.md uses it to account for the operator's run against the limit.

Usage (after make build and make control-plane):

  bench/request_cost.py [--jobs 200] [--patches 400] [--children 200]
"""
import argparse
import concurrent.futures
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import operator_bench as ob  # noqa: E402 - the bench's cluster, workloads and CPU readers


def timed(cluster, fn, items, threads=16):
    """(seconds, apiserver+etcd CPU seconds, machine busy share) of fn over items."""
    cp0, machine, t0 = ob.control_plane_cpu(cluster), ob.MachineCpu(), time.time()
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        list(ex.map(fn, items))
    return time.time() - t0, ob.control_plane_cpu(cluster) - cp0, machine.busy()


def status_patch(cluster, ns, name, i):
    """A merge patch of a TFJob's status like the operator's (a condition and replica counts)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    body = {"status": {"conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated",
                                       "message": f"TFJob {name} is created.", "lastUpdateTime": now,
                                       "lastTransitionTime": now}],
                       "replicaStatuses": {"PS": {"active": i % 2}, "Worker": {"active": i % 5}}, "startTime": now}}
    req = urllib.request.Request(f"{cluster.server}/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/{name}/status",
                                 data=json.dumps(body).encode(), method="PATCH",
                                 headers={"Content-Type": "application/merge-patch+json"})
    with urllib.request.urlopen(req, context=cluster.ctx, timeout=60) as r:
        r.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=200, help="TFJobs created (and patched)")
    ap.add_argument("--patches", type=int, default=400, help="status patches, spread over the TFJobs")
    ap.add_argument("--children", type=int, default=200, help="pods created, then services created")
    a = ap.parse_args()
    rows = []
    with ob.Cluster(nodes=max(4, a.children // 50 + 2)) as cluster:
        ns = cluster.namespace("cost")
        jobs = ob.burst_jobs(ns, a.jobs)
        children = ob.rendered_children(jobs[:max(1, a.children // 5 + 1)], ns)
        pods = [o for o in children if o["kind"] == "Pod"][:a.children]
        services = [o for o in children if o["kind"] == "Service"][:a.children]
        del children
        runs = [
            ("TFJob create", jobs, lambda j: cluster.request(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs",
                                                             "POST", j)),
            ("TFJob status merge patch", range(a.patches),
             lambda i: status_patch(cluster, ns, f"burst-{i % a.jobs}", i)),
            ("pod create", pods, lambda o: cluster.request(f"/api/v1/namespaces/{ns}/pods", "POST", o)),
            ("service create", services, lambda o: cluster.request(f"/api/v1/namespaces/{ns}/services", "POST", o)),
        ]
        for name, items, fn in runs:
            items = list(items)
            seconds, cpu, busy = timed(cluster, fn, items)
            rows.append((name, len(items), seconds, cpu, busy))
            ob.log(f"{name}: {len(items)} in {seconds:.2f} s, apiserver+etcd {cpu:.2f} s CPU, machine busy {busy:.0%}")
            time.sleep(8)  # the scheduler, KWOK and the controllers catch up before the next kind
    ob.print_header()
    ob.Printer().table("What one request costs the API server (16 threads, a fresh cluster, no operator)",
                       ["request", "requests", "seconds", "apiserver+etcd CPU (s)", "CPU ms per request",
                        "machine busy"],
                       [[name, str(n), ob.fmt(s, ".2f"), ob.fmt(c, ".2f"), ob.fmt(1000 * c / n if n else None, ".1f"),
                         ob.fmt(b, ".0%")] for name, n, s, c, b in rows])


if __name__ == "__main__":
    main()
