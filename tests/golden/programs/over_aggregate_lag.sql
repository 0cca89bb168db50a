INSERT INTO append_out SELECT page, LAG(user_id, 1, CAST(0 AS BIGINT)) OVER (PARTITION BY page ORDER BY ts) FROM clicks;
