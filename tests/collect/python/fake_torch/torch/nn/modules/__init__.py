"""Test double."""
