"""Volcano's actions, each one module named after it; run in the configured order."""
