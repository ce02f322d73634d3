"""Saving and loading fitted models: one portable ``.npz`` file, no pickle."""

from .persistence import FORMAT_NAME, FORMAT_VERSION, load, save

__all__ = ["save", "load", "FORMAT_NAME", "FORMAT_VERSION"]
