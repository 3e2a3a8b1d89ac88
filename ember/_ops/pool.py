"""pool ops (see CONTRIBUTING.md)."""
