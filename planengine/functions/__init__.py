"""Built-in functions: the registry keyed by (name, version) and the built-in catalog."""
