"""Tests of hetplace.balance (a package, so its module names cannot clash with tests/ ones)."""
