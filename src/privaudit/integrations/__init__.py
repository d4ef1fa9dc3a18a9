"""Glue to other libraries (Opacus, ...), imported lazily by whoever needs it."""
