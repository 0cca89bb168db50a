"""Launchers run the engine CLI for a job: as local processes or as Kubernetes pods."""
