"""Built-in formats (json, csv, parquet, debezium-json, changelog-json): planner side.

Each module holds one format factory; it declares the format's options and the changelog mode it carries.
Decoding and encoding records is the Spark runtime's job, reading the typed options from the format object.
"""
