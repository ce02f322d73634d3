"""JAX's persistent compilation cache, one call away: :func:`enable_compilation_cache`.

A fit compiles its XLA programs once per process; with the cache on, a later process (the next run
of a script, each worker of a parallel cross-validation) reads them back from disk instead of
compiling them again. JAX keys every entry on the computation, its shapes, the JAX and jaxlib
versions, the backend, the device kind and the XLA flags, so an entry written by another version
or device is never read: that process compiles anew and writes its own entry. An unreadable entry
(a truncated file) makes JAX warn and compile; it is never an error.

The library does not switch the cache on by itself: it is a process-wide JAX setting that the
user's own programs share (docs/performance.md, "Compilation", gives the measurements and the
reasons).

Example:
    >>> import tempfile, jaxmtl
    >>> folder = jaxmtl.enable_compilation_cache(tempfile.mkdtemp())
    >>> folder.is_dir()
    True
    >>> jaxmtl.disable_compilation_cache()
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import jax

from .errors import ParameterError

__all__ = ["default_cache_dir", "enable_compilation_cache", "disable_compilation_cache"]


def default_cache_dir() -> Path:
    """The folder :func:`enable_compilation_cache` uses when given none: ``jaxmtl/xla`` in the
    user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on
    macOS, ``%LOCALAPPDATA%`` on Windows).

    Example:
        >>> default_cache_dir().parts[-2:]
        ('jaxmtl', 'xla')
    """
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "jaxmtl" / "xla"


def _check_writable(folder: Path) -> None:
    """Create ``folder`` and write a file in it, or raise ParameterError naming it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError as exc:
        raise ParameterError(
            f"path: the compilation cache folder {str(folder)!r} cannot be created or written "
            f"({exc.strerror or exc}); pass a folder you can write to.") from exc


def _reset_jax_cache() -> None:
    """Make JAX read its cache settings again at the next compilation: it decides once per process
    whether a cache is used, at the first compilation."""
    from jax.experimental.compilation_cache import compilation_cache

    compilation_cache.reset_cache()


def enable_compilation_cache(path: str | os.PathLike[str] | None = None) -> Path:
    """Keep every compiled XLA program in ``path``, so that later processes read it back.

    Sets JAX's ``jax_compilation_cache_dir`` and writes every program, however short its compile
    time or small its size (JAX's defaults keep only programs compiling for over a second, which
    leaves out most of a small fit's). Takes effect from the next compilation, also when the
    process has compiled before. The setting is JAX's, for the whole process.

    Args:
      path: the folder (created if missing); None: :func:`default_cache_dir`.

    Returns:
      The folder, as an absolute ``Path``.

    Raises:
      ParameterError: the folder cannot be created or written (the message names it).

    Example:
        >>> import tempfile
        >>> enable_compilation_cache(tempfile.mkdtemp()).is_absolute()
        True
        >>> disable_compilation_cache()
    """
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ParameterError(f"path must be None or a folder's path (str or os.PathLike); received "
                             f"{type(path).__name__} {path!r}.")
    folder = (default_cache_dir() if path is None else Path(path)).expanduser().absolute()
    _check_writable(folder)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    _reset_jax_cache()
    return folder


def disable_compilation_cache() -> None:
    """Stop reading and writing the persistent cache in this process (JAX's defaults again; the
    folder's files stay).

    Example:
        >>> disable_compilation_cache()
    """
    jax.config.update("jax_compilation_cache_dir", None)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    _reset_jax_cache()
