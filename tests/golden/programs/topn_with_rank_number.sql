INSERT INTO wide_out SELECT page, referrer, rn, ts FROM (SELECT page, referrer, ts, ROW_NUMBER() OVER (PARTITION BY page ORDER BY ts DESC) AS rn FROM clicks) WHERE rn <= 2;
