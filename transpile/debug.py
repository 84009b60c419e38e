"""tp.debug: JAX's jax.debug.print. Transformed code runs as Python, so a plain `print`
works everywhere too; this spelling keeps JAX code unchanged."""
from runtime.errors import debug_print as print  # noqa: A001  (the name JAX code calls)

__all__ = ["print"]
