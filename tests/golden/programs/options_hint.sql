INSERT INTO append_out SELECT page, user_id FROM clicks /*+ OPTIONS('source.monitor-interval' = '10 s') */;
