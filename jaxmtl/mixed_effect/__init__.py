r"""Mixed-effect multi-task learning ([Din11] ch. 5): a common function plus a shift per task.

==================  ========================================================================
module              content
==================  ========================================================================
:mod:`.kernel`      the kernel (5.2)/(5.5), :class:`ExponentialDot`, α / λ checks
:mod:`.centralized` Algorithm 4: (K + λW)c = y in O(Σⱼ ℓⱼ³ + n³) over n distinct inputs
:mod:`.online`      Algorithms 5–9 in float64 on the host: the sends (three cases, transactions), Algorithm 9
:mod:`.server`      :class:`Server`, :class:`Client`, :class:`PassiveClient`, what is disclosed
:mod:`.state`       save / load of a server's state (portable ``.npz``, no pickle)
:mod:`.journal`     durability: the checksummed send log after a snapshot, replay, compaction
:mod:`.serve`       the server over HTTP (Starlette + uvicorn; extra ``serve``, not imported here)
:mod:`.remote`      its Python client, :class:`~.remote.RemoteClient` (httpx; not imported here)
==================  ========================================================================

The estimator in scikit-learn's conventions is :class:`jaxmtl.models.mixed_effect.MixedEffectRegressor`.

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, Università di Pavia, 2011.
"""

from functools import partial

from ..io.registry import FileFormat, register_format, register_kernel
from .centralized import MixedEffectSolution, algorithm4
from .kernel import ExponentialDot, mixed_effect_gram
from .server import Client, DisclosedDatabase, PassiveClient, Server
from .state import SERVER_FORMAT, SERVER_FORMAT_VERSION, load_server, restore_server, save_server, server_state

# the server is saved in its own format; its kernel may be ExponentialDot (registered for kernel specs)
register_format(FileFormat(SERVER_FORMAT, SERVER_FORMAT_VERSION, Server, server_state, partial(restore_server, Server)))
register_kernel(ExponentialDot)

__all__ = ["Server", "Client", "PassiveClient", "DisclosedDatabase", "algorithm4", "MixedEffectSolution",
           "ExponentialDot", "mixed_effect_gram", "save_server", "load_server"]
