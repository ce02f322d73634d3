"""Start a script as N processes of one jax.distributed run (see docs/distributed.md).

    python scripts/launch_distributed.py --processes 4 examples/distributed_regression.py
    python scripts/launch_distributed.py --coordinator host0:61234 --num-processes 8 --process-id 3 script.py

The same as ``python -m jaxmtl.distributed.launch``.
"""

import sys

from jaxmtl.distributed.launch import main

if __name__ == "__main__":
    sys.exit(main())
