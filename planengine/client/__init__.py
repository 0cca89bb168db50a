"""What users of the SQL client see: tables printed like Flink's SQL client, the interactive prompt and
bounded SELECT previews."""
