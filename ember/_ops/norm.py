"""norm ops (see CONTRIBUTING.md)."""
