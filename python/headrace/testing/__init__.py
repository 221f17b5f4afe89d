"""Helpers for headrace's own tests (and users' tests): writers of source formats from their specs."""
