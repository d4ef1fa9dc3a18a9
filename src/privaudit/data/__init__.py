"""Embedded default data: shipped with Python or generated, never downloaded."""

from .corpus import load_default_corpus

__all__ = ["load_default_corpus"]
