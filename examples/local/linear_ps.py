#!/usr/bin/env python3
"""Parameter-server training of a linear model in Python's standard library, for `tfjob run`.

Every replica reads TF_CONFIG the way TensorFlow does. Parameter servers (ps) hold the model's
weights, split among them; workers compute gradients on their own synthetic shard and push and
pull them over TCP; the chief reports the loss and exits 0 once the model has converged (the
job then succeeds, and `tfjob run` stops the other replicas)."""
import json
import os
import random
import socket
import socketserver
import sys
import threading
import time

CONFIG = json.loads(os.environ["TF_CONFIG"])
CLUSTER, TASK = CONFIG["cluster"], CONFIG["task"]
ROLE, INDEX = TASK["type"], TASK["index"]
ME = f"{ROLE}-{INDEX}"
DIM = 8
TRUE_W = [(i + 1) * 0.5 * (-1) ** i for i in range(DIM)]
PS = CLUSTER.get("ps", [])


def say(*parts):
    print(ME + ":", *parts, flush=True)


def endpoint(hostport):
    host, port = hostport.rsplit(":", 1)
    return host, int(port)


def call(hostport, message):
    """One request/response over TCP; peers start in any order, so retry a while."""
    deadline = time.time() + 20
    while True:
        try:
            with socket.create_connection(endpoint(hostport), timeout=5) as s:
                s.sendall((json.dumps(message) + "\n").encode())
                return json.loads(s.makefile().readline())
        except OSError:
            if time.time() > deadline:
                say(f"cannot reach {hostport}")
                sys.exit(2)
            time.sleep(0.05)


def owner(i):
    return i % len(PS)


def pull():
    weights = [0.0] * DIM
    for p, hostport in enumerate(PS):
        for i, w in call(hostport, {"op": "pull"})["weights"].items():
            weights[int(i)] = w
    return weights


def data(seed, n=256):
    rng = random.Random(seed)
    xs = [[rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(n)]
    ys = [sum(w * x for w, x in zip(TRUE_W, row)) + rng.gauss(0, 0.01) for row in xs]
    return xs, ys


def loss(weights, xs, ys):
    return sum((sum(w * x for w, x in zip(weights, row)) - y) ** 2 for row, y in zip(xs, ys)) / len(xs)


def run_ps():
    mine = {i: 0.0 for i in range(DIM) if owner(i) == INDEX}
    lock = threading.Lock()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            msg = json.loads(self.rfile.readline())
            with lock:
                if msg["op"] == "push":
                    for i, g in msg["grads"].items():
                        mine[int(i)] -= msg["lr"] * g
                reply = {"weights": {str(i): w for i, w in mine.items()}}
            self.wfile.write((json.dumps(reply) + "\n").encode())

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    server = socketserver.ThreadingTCPServer(endpoint(PS[INDEX]), Handler)
    say(f"serving weights {sorted(mine)} on {PS[INDEX]} (from TF_CONFIG)")
    server.serve_forever()


def run_worker():
    say(f"found peers through TF_CONFIG: ps={PS} workers={CLUSTER.get('worker', [])}")
    xs, ys = data(seed=100 + INDEX)
    step = 0
    while True:
        w = pull()
        residual = [sum(wi * x for wi, x in zip(w, row)) - y for row, y in zip(xs, ys)]
        grad = [2 * sum(r * row[i] for r, row in zip(residual, xs)) / len(xs) for i in range(DIM)]
        for p, hostport in enumerate(PS):
            call(hostport, {"op": "push", "lr": 0.1, "grads": {str(i): grad[i] for i in range(DIM) if owner(i) == p}})
        step += 1
        if step % 25 == 0:
            say(f"step {step}: loss on my shard {loss(w, xs, ys):.5f}")


def run_chief():
    say(f"found peers through TF_CONFIG: ps={PS} workers={CLUSTER.get('worker', [])}")
    xs, ys = data(seed=7, n=128)
    start = time.time()
    while time.time() - start < 25:
        current = loss(pull(), xs, ys)
        say(f"validation loss {current:.5f}")
        if current < 1e-3:
            say(f"converged in {time.time() - start:.1f}s; done")
            return 0
        time.sleep(0.5)
    say("did not converge in 25 s")
    return 1


if __name__ == "__main__":
    if ROLE == "ps":
        run_ps()
    elif ROLE == "worker":
        run_worker()
    else:
        sys.exit(run_chief())
