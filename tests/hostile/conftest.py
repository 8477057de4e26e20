"""The hostile-input suite's harness: every case runs an entry point of tfjob (the file reader,
`tfjob run`, the operator's HTTP servers, the kubeconfig reader, the watch stream) on one hostile
input, checks the clear error it must give, and records how long it took and how much memory the
process under test peaked at. The table of every case is printed at the end of the run.

Bounds, not timings: a case fails when the process needs more than its memory bound (peak RSS) or
hangs past its time-out; the time itself is printed, never asserted.
"""
import os
import subprocess
import time
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TFJOB = os.path.join(ROOT, "build", "release", "tfjob")
MiB = 1024 * 1024

_rows = []


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_bytes: int

    @property
    def output(self):
        return self.stdout + self.stderr


def record(entry_point, case, seconds, peak_rss_bytes, result):
    """Adds one row to the table printed at the end (entry point, case, s, peak MiB, result)."""
    _rows.append((entry_point, case, seconds, peak_rss_bytes, result))


def run_measured(args, entry_point, case, stdin=None, timeout=60, max_rss_mib=256, env=None, cwd=ROOT):
    """Runs args to completion and measures its wall time and its own peak RSS (from wait4's rusage,
    so only this process counts). Fails on a hang past `timeout` or a peak over `max_rss_mib`."""
    started = time.monotonic()
    proc = subprocess.Popen(args, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        out, err = proc.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        record(entry_point, case, time.monotonic() - started, 0, "HANG")
        pytest.fail(f"{case}: no answer within {timeout}s (hang)")
    seconds = time.monotonic() - started
    peak = getattr(proc, "_tfjob_peak", 0)
    outcome = Outcome(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), seconds, peak)
    ok = peak <= max_rss_mib * MiB
    record(entry_point, case, seconds, peak, f"rc {proc.returncode}" + ("" if ok else " OVER MEMORY BOUND"))
    assert ok, f"{case}: peak RSS {peak / MiB:.1f} MiB over the bound of {max_rss_mib} MiB"
    return outcome


# subprocess.Popen reaps through os.waitpid; wrap it with os.wait4 so that the child's own peak
# RSS (ru_maxrss, KiB on Linux) is kept on the Popen object.
_orig_try_wait = subprocess.Popen._try_wait


def _try_wait_with_rusage(self, wait_flags):
    try:
        pid, sts, usage = os.wait4(self.pid, wait_flags)
    except ChildProcessError:
        pid, sts = self.pid, 0
        usage = None
    if pid == self.pid and usage is not None:
        self._tfjob_peak = usage.ru_maxrss * 1024
    return (pid, sts)


subprocess.Popen._try_wait = _try_wait_with_rusage


def process_peak_rss(pid):
    """The peak RSS (VmHWM) of a process that is still running, in bytes; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def pytest_terminal_summary(terminalreporter):
    if not _rows:
        return
    tr = terminalreporter
    tr.section("hostile inputs: time and peak memory per case")
    tr.write_line(f"{'entry point':<16} {'case':<52} {'seconds':>8} {'peak MiB':>9}  result")
    for entry_point, case, seconds, peak, result in _rows:
        tr.write_line(f"{entry_point:<16} {case[:52]:<52} {seconds:>8.2f} {peak / MiB:>9.1f}  {result}")


@pytest.fixture(scope="session")
def tfjob():
    if not os.access(TFJOB, os.X_OK):
        pytest.fail(f"{TFJOB} is not built: run make build")
    return TFJOB
