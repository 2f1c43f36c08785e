"""CLI sub-commands (thin: parse arguments, call the core, print)."""
