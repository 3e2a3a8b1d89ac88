"""random ops (see CONTRIBUTING.md)."""
