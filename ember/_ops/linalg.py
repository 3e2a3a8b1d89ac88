"""linalg ops (see CONTRIBUTING.md)."""
