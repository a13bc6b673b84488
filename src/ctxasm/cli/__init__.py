"""The command line: a thin edge that reads JSON, calls the library and writes JSON."""
