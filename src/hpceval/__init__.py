"""hpceval: measure how well a platform serves parallel scientific codes, and at what cost."""

__version__ = "0.1.0"
