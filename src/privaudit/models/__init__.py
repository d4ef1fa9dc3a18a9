"""Model adapters and reference models. Everything here needs the ``lm`` extra (PyTorch)."""
