"""Compiling a snapshot: node classes, candidate pairs, the tables every model reads."""
