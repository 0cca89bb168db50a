"""Test tiers (fast → spark → e2e), derived from what a test uses; see ``docs/testing.md``."""
