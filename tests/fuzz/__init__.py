"""Fuzzing of the memory-safe boundary: every entry point of every algorithm, in subprocesses."""
