r"""Start a script as N processes of one run: ``python -m jaxmtl.distributed.launch``.

On one machine (``--processes N``) the launcher picks a free port on 127.0.0.1, starts N copies
of the script with ``JAXMTL_COORDINATOR_ADDRESS``, ``JAXMTL_NUM_PROCESSES`` and
``JAXMTL_PROCESS_ID`` set (read by :func:`jaxmtl.distributed.initialize`), prefixes their output
with ``[i]``, and waits. When one exits with an error the others get ``--grace`` seconds to
report theirs and are then stopped; past ``--timeout`` all are stopped. The exit status is the
first non-zero one.

On several hosts, run one process per host (or per accelerator) with the scheduler — ``srun``,
``mpirun``, ``torchrun`` — which sets the variables :func:`~jaxmtl.distributed.resolve_cluster`
reads; or give them here: ``--coordinator host0:61234 --num-processes 8 --process-id 3`` sets
them and runs the script in this process.

Example (shell)::

    python -m jaxmtl.distributed.launch --processes 4 examples/distributed_regression.py
"""

from __future__ import annotations

import argparse
import os
import runpy
import socket
import subprocess
import sys
import threading
import time

__all__ = ["free_port", "launch_local", "main"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _relay(stream, prefix: str, sink) -> None:
    for line in iter(stream.readline, ""):
        sink.write(f"[{prefix}] {line}")
        sink.flush()


def launch_local(argv: list[str], processes: int, timeout: float = 3600.0, grace: float = 30.0,
                 env: dict | None = None, python: str = sys.executable) -> int:
    """Run ``python argv…`` as ``processes`` processes of one run on 127.0.0.1; the exit status.

    Args:
      argv: the script and its arguments; processes: N ≥ 1; timeout: seconds for the whole run;
      grace: seconds the others get after one fails; env: base environment (default os.environ).
    """
    if processes < 1:
        raise SystemExit(f"--processes must be at least 1; received {processes}.")
    base = dict(os.environ if env is None else env)
    base["JAXMTL_COORDINATOR_ADDRESS"] = f"127.0.0.1:{free_port()}"
    base["JAXMTL_NUM_PROCESSES"] = str(processes)
    procs = []
    for i in range(processes):
        penv = {**base, "JAXMTL_PROCESS_ID": str(i), "PYTHONUNBUFFERED": "1"}
        p = subprocess.Popen([python, *argv], env=penv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=_relay, args=(p.stdout, str(i), sys.stdout), daemon=True).start()
        procs.append(p)
    deadline = time.monotonic() + timeout
    status, failed_at, reported = 0, None, set()
    while True:
        running = any(p.poll() is None for p in procs)
        now = time.monotonic()
        for i, p in enumerate(procs):
            if p.returncode not in (None, 0) and i not in reported:
                reported.add(i)
                status, failed_at = status or p.returncode, failed_at or now
                sys.stderr.write(f"jaxmtl.distributed.launch: process {i} exited with status {p.returncode}"
                                 + (f"; stopping the others in {grace:g} s.\n" if running else ".\n"))
        if not running:
            break
        if now > deadline or (failed_at is not None and now > failed_at + grace):
            sys.stderr.write("jaxmtl.distributed.launch: " + ("timeout" if now > deadline else "grace period")
                             + " over; stopping the remaining processes.\n")
            for p in procs:
                if p.poll() is None:
                    p.kill()
            status = status or 124
            break
        time.sleep(0.1)
    for p in procs:
        p.wait()
    return status


def main(args: list[str] | None = None) -> int:
    """Command line: see the module docstring and ``--help``."""
    parser = argparse.ArgumentParser(prog="python -m jaxmtl.distributed.launch",
                                     description="Run a script as the processes of one jax.distributed run.")
    parser.add_argument("--processes", type=int, help="start this many local processes on 127.0.0.1")
    parser.add_argument("--coordinator", help="host:port of process 0 (several hosts)")
    parser.add_argument("--num-processes", type=int, help="processes in the run (several hosts)")
    parser.add_argument("--process-id", type=int, help="this process's id (several hosts)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds for the whole local run")
    parser.add_argument("--grace", type=float, default=30.0, help="seconds the others get after one fails")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(args)
    argv = [ns.script, *ns.script_args]
    if ns.processes is not None:
        return launch_local(argv, ns.processes, ns.timeout, ns.grace)
    for name, value in (("JAXMTL_COORDINATOR_ADDRESS", ns.coordinator), ("JAXMTL_NUM_PROCESSES", ns.num_processes),
                        ("JAXMTL_PROCESS_ID", ns.process_id)):
        if value is not None:
            os.environ[name] = str(value)
    sys.argv = argv
    runpy.run_path(ns.script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
