"""privaudit: empirical privacy auditing of machine-learning models."""
__version__ = "0.1.0"
