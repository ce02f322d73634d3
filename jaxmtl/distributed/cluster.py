r"""Joining a multi-process run: who the coordinator is, how many processes, which one this is.

JAX's multi-controller runtime does the work (:func:`jax.distributed.initialize`: a coordinator
service on process 0, heartbeats, and the CPU collectives — Gloo over TCP — or NCCL on GPUs);
this module only finds its three arguments and turns a lost process into a clear
:class:`~jaxmtl.errors.DistributedError` instead of a hang or a native abort.

The arguments are read, in order, from the explicit arguments, then the environment:

==========================  ==================================  ===============================
source                      coordinator                         process id / count
==========================  ==================================  ===============================
``jaxmtl`` (the launcher)   ``JAXMTL_COORDINATOR_ADDRESS``      ``JAXMTL_PROCESS_ID`` /
                                                                ``JAXMTL_NUM_PROCESSES``
torchrun style              ``MASTER_ADDR``:``MASTER_PORT``     ``RANK`` / ``WORLD_SIZE``
Open MPI (``mpirun``)       ``MASTER_ADDR`` (+ port)            ``OMPI_COMM_WORLD_RANK`` /
                                                                ``OMPI_COMM_WORLD_SIZE``
SLURM (``srun``)            first host of                       ``SLURM_PROCID`` /
                            ``SLURM_STEP_NODELIST``             ``SLURM_NTASKS``
==========================  ==================================  ===============================

A coordinator without a port gets ``JAXMTL_COORDINATOR_PORT`` or :data:`DEFAULT_PORT`.

Example:
    >>> resolve_cluster(env={"RANK": "1", "WORLD_SIZE": "4", "MASTER_ADDR": "node0", "MASTER_PORT": "29500"})
    ClusterSpec(coordinator='node0:29500', num_processes=4, process_id=1, source='torchrun')
"""

from __future__ import annotations

import os
import re
import sys
import threading
from contextlib import contextmanager
from typing import Iterator, Mapping, NamedTuple

import jax

from ..errors import DistributedError, ParameterError

__all__ = ["ClusterSpec", "DEFAULT_PORT", "JOIN_EXIT_CODE", "collective_errors", "initialize", "resolve_cluster"]

DEFAULT_PORT = 61234
# exit status of a process whose peers did not all join within the timeout
JOIN_EXIT_CODE = 75


class ClusterSpec(NamedTuple):
    """The three arguments of :func:`jax.distributed.initialize` and where they were found."""

    coordinator: str
    num_processes: int
    process_id: int
    source: str


def _first_host(nodelist: str) -> str:
    """First host of a SLURM node list: ``'gpu[03-05,09],cpu1'`` → ``'gpu03'``."""
    m = re.match(r"([^,\[]+)(?:\[([^\]]+)\])?", nodelist.strip())
    if m is None:
        raise ParameterError(f"SLURM_STEP_NODELIST could not be read; received {nodelist!r}.")
    prefix, ranges = m.group(1), m.group(2)
    return prefix if ranges is None else prefix + re.split(r"[-,]", ranges)[0]


def _with_port(address: str, env: Mapping[str, str]) -> str:
    if re.search(r":\d+$", address):
        return address
    return f"{address}:{env.get('JAXMTL_COORDINATOR_PORT', env.get('MASTER_PORT', DEFAULT_PORT))}"


def _integer(value, name: str, minimum: int) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be an integer >= {minimum}; received {value!r}.") from None
    if out < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}; received {out}.")
    return out


def resolve_cluster(coordinator: str | None = None, num_processes: int | None = None,
                    process_id: int | None = None, env: Mapping[str, str] | None = None) -> ClusterSpec:
    """The coordinator address, process count and id, from the arguments or the environment.

    Args:
      coordinator: ``host:port`` of process 0's coordinator service (a bare host gets a port).
      num_processes: number of processes N ≥ 1; process_id: this process, 0 ≤ id < N.
      env: the environment to read (default ``os.environ``).

    Raises:
      ParameterError: naming the argument (or variable) that is missing or out of range.
    """
    env = os.environ if env is None else env
    source = "arguments"
    found = None
    if "JAXMTL_NUM_PROCESSES" in env:
        found = ("jaxmtl", env.get("JAXMTL_COORDINATOR_ADDRESS"), env["JAXMTL_NUM_PROCESSES"],
                 env.get("JAXMTL_PROCESS_ID"))
    elif "WORLD_SIZE" in env and "RANK" in env:
        host = env.get("MASTER_ADDR")
        found = ("torchrun", host and _with_port(host, env), env["WORLD_SIZE"], env["RANK"])
    elif "OMPI_COMM_WORLD_SIZE" in env:
        host = env.get("JAXMTL_COORDINATOR_ADDRESS", env.get("MASTER_ADDR"))
        found = ("openmpi", host and _with_port(host, env), env["OMPI_COMM_WORLD_SIZE"],
                 env.get("OMPI_COMM_WORLD_RANK"))
    elif "SLURM_NTASKS" in env and "SLURM_PROCID" in env:
        nodes = env.get("SLURM_STEP_NODELIST", env.get("SLURM_JOB_NODELIST"))
        host = env.get("JAXMTL_COORDINATOR_ADDRESS") or (nodes and _first_host(nodes))
        found = ("slurm", host and _with_port(host, env), env["SLURM_NTASKS"], env["SLURM_PROCID"])
    n_given: int | str | None = num_processes  # the environment's values are strings, read by _integer
    pid_given: int | str | None = process_id
    if found is not None and (coordinator is None or n_given is None or pid_given is None):
        source = found[0]
        coordinator = found[1] if coordinator is None else coordinator
        n_given = found[2] if n_given is None else n_given
        pid_given = found[3] if pid_given is None else pid_given
    if coordinator is None:
        raise ParameterError("coordinator must be given as 'host:port' (or set JAXMTL_COORDINATOR_ADDRESS, "
                             "MASTER_ADDR, or run under SLURM); received None.")
    if n_given is None or pid_given is None:
        raise ParameterError("num_processes and process_id must be given (or set JAXMTL_NUM_PROCESSES and "
                             f"JAXMTL_PROCESS_ID, RANK and WORLD_SIZE, ...); received {n_given!r}, "
                             f"{pid_given!r}.")
    n = _integer(n_given, "num_processes", 1)
    pid = _integer(pid_given, "process_id", 0)
    if pid >= n:
        raise ParameterError(f"process_id must lie in [0, num_processes={n}); received {pid}.")
    if not isinstance(coordinator, str) or not re.fullmatch(r"[^\s:]+:\d+", _with_port(coordinator, env)):
        raise ParameterError(f"coordinator must be 'host:port'; received {coordinator!r}.")
    return ClusterSpec(_with_port(coordinator, env), n, pid, source)


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None,
               timeout: float = 300.0, heartbeat_timeout: int = 100, env: Mapping[str, str] | None = None
               ) -> ClusterSpec:
    """Join the run: :func:`jax.distributed.initialize` with the resolved arguments.

    Every process blocks until all N have joined. If they have not within ``timeout`` seconds,
    this process writes a :class:`~jaxmtl.errors.DistributedError` message naming the
    coordinator and the count to stderr and exits with status :data:`JOIN_EXIT_CODE` (the
    native runtime would otherwise abort later without saying which run it was waiting for).
    A process that stops sending heartbeats for ``heartbeat_timeout`` seconds is declared dead
    and the others stop (see :func:`collective_errors`).

    Args:
      coordinator, num_processes, process_id: see :func:`resolve_cluster`.
      timeout: seconds to wait for every process to join; heartbeat_timeout: seconds.

    Returns:
      the :class:`ClusterSpec` used. A one-process run (N = 1) does not start the runtime.
    """
    spec = resolve_cluster(coordinator, num_processes, process_id, env)
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ParameterError(f"timeout must be a positive number of seconds; received {timeout!r}.")
    heartbeat_timeout = _integer(heartbeat_timeout, "heartbeat_timeout", 1)
    if spec.num_processes == 1:
        return spec
    joined = threading.Event()

    def watchdog():
        if not joined.wait(timeout):
            sys.stderr.write(
                f"jaxmtl.errors.DistributedError: process {spec.process_id} of {spec.num_processes}: not every "
                f"process joined the coordinator at {spec.coordinator} within {timeout:g} s (a process never "
                "started, died before joining, or cannot reach the coordinator's host and port).\n")
            sys.stderr.flush()
            os._exit(JOIN_EXIT_CODE)

    threading.Thread(target=watchdog, daemon=True).start()
    jax.distributed.initialize(spec.coordinator, spec.num_processes, spec.process_id,
                               initialization_timeout=int(timeout) + 30,
                               heartbeat_timeout_seconds=heartbeat_timeout)
    joined.set()
    return spec


# Messages of the collectives' transports when a peer has gone (Gloo over TCP, the coordination
# service, NCCL); any other error passes through unchanged.
_LOST_PEER = re.compile(r"Gloo|Connection (closed|reset|refused)|UNAVAILABLE|heartbeat|NCCL|peer", re.IGNORECASE)


@contextmanager
def collective_errors(what: str) -> Iterator[None]:
    """Re-raise the failure of a collective caused by a lost process as a DistributedError.

    Example:
        >>> with collective_errors("the path"):
        ...     pass
    """
    try:
        yield
    except Exception as err:  # noqa: BLE001 - re-raised with its cause below
        if jax.process_count() > 1 and _LOST_PEER.search(str(err)):
            raise DistributedError(
                f"{what} failed on process {jax.process_index()} of {jax.process_count()}: another process "
                f"died or left while this one waited in a collective ({type(err).__name__}: "
                f"{str(err).splitlines()[0][:300]})."
            ) from err
        raise
