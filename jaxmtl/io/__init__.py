"""Saving and loading fitted models: one portable ``.npz`` file, no pickle (:mod:`.persistence`);
exporting a fitted model's prediction function as a StableHLO artefact that runs without jaxmtl
(:mod:`.export`)."""

from .export import export
from .persistence import FORMAT_NAME, FORMAT_VERSION, load, save

__all__ = ["save", "load", "export", "FORMAT_NAME", "FORMAT_VERSION"]
