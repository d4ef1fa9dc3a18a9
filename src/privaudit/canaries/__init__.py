"""Canaries: text formats with random holes, their randomness spaces, and insertion with provenance."""

from .insertion import InsertedCorpus, Provenance, insert_canaries, remove_canaries
from .text import Canary, CanaryFormat

__all__ = ["Canary", "CanaryFormat", "InsertedCorpus", "Provenance", "insert_canaries", "remove_canaries"]
