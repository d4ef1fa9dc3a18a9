"""Reference trainers: a minimal DP-SGD with per-example gradients and injectable bugs."""
