"""Audits: each turns a configuration into observations, hands them to the statistical core, and reports."""
