INSERT INTO append_out VALUES ('a', 1), ('b', 2), ('c', CAST(NULL AS BIGINT));
