"""Figures declared as data: one module per study."""
