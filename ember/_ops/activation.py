"""activation ops (see CONTRIBUTING.md)."""
