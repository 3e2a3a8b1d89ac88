"""embedding ops (see CONTRIBUTING.md)."""
