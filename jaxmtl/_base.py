"""scikit-learn conventions without a dependency on scikit-learn: get_params / set_params."""

from __future__ import annotations

import inspect

from .errors import NotFittedError, ParameterError


class BaseEstimator:
    """Stores ``__init__`` keyword arguments unchanged; ``get_params`` / ``set_params`` read
    and write them, as scikit-learn's ``BaseEstimator`` does."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments as a dict."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params) -> "BaseEstimator":
        """Set constructor arguments; unknown names raise ParameterError."""
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ParameterError(
                    f"{type(self).__name__} has no parameter {key!r}; valid: {valid}."
                )
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _check_fitted(self, attribute: str = "coef_") -> None:
        if not hasattr(self, attribute):
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet; call fit(...) before using it."
            )

    def save(self, path) -> None:
        """Save the fitted estimator to a portable file; see :func:`jaxmtl.persistence.save`."""
        from .persistence import save

        save(self, path)
