"""conv ops (see CONTRIBUTING.md)."""
