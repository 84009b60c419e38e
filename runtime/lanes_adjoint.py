"""Batching (vmap) helpers; see runtime/batching.py for the conventions."""

__all__ = []
