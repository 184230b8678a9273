"""The rule language: YAML source, schema, extends, compiler and the compiled model."""
