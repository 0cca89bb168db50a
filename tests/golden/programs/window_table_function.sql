INSERT INTO wide_out SELECT page, referrer, user_id, window_start FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE));
