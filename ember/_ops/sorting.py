"""sorting ops (see CONTRIBUTING.md)."""
