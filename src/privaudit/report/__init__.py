"""Figures for audit results (matplotlib, imported lazily, Agg backend)."""
