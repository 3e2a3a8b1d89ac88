"""loss ops (see CONTRIBUTING.md)."""
