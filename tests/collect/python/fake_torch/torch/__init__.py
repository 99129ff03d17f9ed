"""Test double of torch's module layout for the torch hook spec; no torch code."""
from . import nn  # noqa: F401  (torch imports nn at start-up as well)
