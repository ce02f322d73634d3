"""Saving and loading fitted models: one portable ``.npz`` file, no pickle (:mod:`.persistence`).

Exporting a fitted model's prediction function as a StableHLO artefact that runs without jaxmtl
is :func:`jaxmtl.export` (:mod:`jaxmtl.models.export`: it reads fitted models, which this layer
does not import)."""

from .persistence import FORMAT_NAME, FORMAT_VERSION, load, save

__all__ = ["save", "load", "FORMAT_NAME", "FORMAT_VERSION"]
