"""misc ops (see CONTRIBUTING.md)."""
