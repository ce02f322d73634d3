r"""Multi-process, multi-host runs on JAX's multi-controller runtime (:mod:`jax.distributed`).

* :mod:`~jaxmtl.distributed.cluster` — join a run (coordinator, process id and count from
  arguments or the usual scheduler variables), lost processes as ``DistributedError``;
* :mod:`~jaxmtl.distributed.mesh` — the global ``("rows",)`` mesh and each process's rows;
* :mod:`~jaxmtl.distributed.data` — rows from memory or memory-mapped ``.npy`` into global arrays;
* :mod:`~jaxmtl.distributed.paths` — compiled matrix-free paths, k-fold selection, predictions and
  Nyström statistics on those arrays;
* :mod:`~jaxmtl.distributed.rows` — the training rows of an approximate estimator fitted with
  ``mesh=`` (:class:`~jaxmtl.ApproximateKernelRegressor`): moments, checks and Nyström
  statistics over every process's rows;
* :mod:`~jaxmtl.distributed.estimator` — :class:`DistributedKernelRegressor`, the scikit-learn
  style estimator that takes the mesh as a parameter;
* :mod:`~jaxmtl.distributed.launch` — ``python -m jaxmtl.distributed.launch``, N processes on
  one machine or one per host;
* :mod:`~jaxmtl.distributed.sweeps` — :func:`shard_sweep`: a sweep's width, ω or data-set axis
  over the devices of a mesh (beside the row sharding).

The guide is ``docs/distributed.md``.
"""

from .cluster import ClusterSpec, collective_errors, initialize, resolve_cluster
from .data import global_rows, open_rows, read_local_rows, to_host
from .estimator import DistributedKernelRegressor
from .mesh import RowLayout, check_mesh, global_mesh
from .paths import (
    distributed_operator,
    feature_statistics_global,
    kfold_path_losses,
    predict_rows,
    refit_path,
)
from .rows import ShardedRows
from .sweeps import shard_sweep, sweep_mesh

__all__ = [
    "ClusterSpec",
    "DistributedKernelRegressor",
    "RowLayout",
    "ShardedRows",
    "check_mesh",
    "collective_errors",
    "distributed_operator",
    "feature_statistics_global",
    "global_mesh",
    "global_rows",
    "initialize",
    "kfold_path_losses",
    "open_rows",
    "predict_rows",
    "read_local_rows",
    "refit_path",
    "resolve_cluster",
    "shard_sweep",
    "sweep_mesh",
    "to_host",
]
