"""Prefect flows: they wire tasks together and take one validated config each."""
