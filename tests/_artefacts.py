"""Exported artefacts loaded and called in a fresh interpreter that imports JAX and NumPy only
(never jaxmtl nor equinox): the loader the export tests share."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

# Every artefact deserialized and called on each input set — the inputs under key ``<inputs>/<set>``
# of inputs.npz, plus ``codes/<set>`` (int32) where it takes two arguments — in float64 (x64 on,
# scoped) for float64 artefacts and in JAX's default configuration otherwise.
LOADER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax
    cases, inputs = json.loads(sys.argv[1]), np.load("inputs.npz")
    sets = sorted({key.split("/")[1] for key in inputs.files})
    out, platforms = {}, {}
    for name, key in cases.items():
        with open(name + ".jaxexport", "rb") as f:
            exported = jax.export.deserialize(bytearray(f.read()))
        platforms[name] = list(exported.platforms)
        dtype = exported.in_avals[0].dtype
        with jax.enable_x64(dtype == np.float64):
            for s in sets:
                X = inputs[key + "/" + s].astype(dtype)
                args = (X, inputs["codes/" + s].astype(np.int32)) if len(exported.in_avals) == 2 else (X,)
                out[name + "/" + s] = np.asarray(exported.call(*args))
    np.savez("outputs.npz", **out)
    print(json.dumps({"jaxmtl": "jaxmtl" in sys.modules, "equinox": "equinox" in sys.modules,
                      "platforms": platforms}))
""")


def load_in_fresh_process(folder, cases: dict, inputs: dict) -> tuple[dict, dict]:
    """Write ``inputs`` to ``folder``/inputs.npz, run :data:`LOADER` there on the artefacts
    ``<name>.jaxexport`` of ``cases`` (name -> inputs key), and return (its report, the outputs
    by ``<name>/<set>``)."""
    np.savez(os.path.join(folder, "inputs.npz"), **inputs)
    run = subprocess.run([sys.executable, "-c", LOADER, json.dumps(cases)], cwd=folder, capture_output=True,
                         text=True, timeout=600,
                         env={k: v for k, v in os.environ.items() if not k.startswith(("JAX_ENABLE_X64", "PYTHONPATH"))})
    assert run.returncode == 0, run.stderr
    outputs = np.load(os.path.join(folder, "outputs.npz"))
    return json.loads(run.stdout.strip().splitlines()[-1]), {k: outputs[k] for k in outputs.files}
