"""Keeping the vault in shape: sleep, lifecycle, tiers, splits, daily logs, the graph."""
