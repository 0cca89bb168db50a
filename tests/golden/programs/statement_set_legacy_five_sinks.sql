BEGIN STATEMENT SET;
INSERT INTO page_views SELECT page, COUNT(*) FROM clicks GROUP BY page;
INSERT INTO page_users SELECT page, COUNT(DISTINCT user_id) FROM clicks GROUP BY page;
INSERT INTO append_out SELECT page, user_id FROM clicks WHERE referrer IS NULL;
INSERT INTO window_counts SELECT page, window_start, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY page, window_start, window_end;
INSERT INTO printed SELECT UPPER(page), user_id FROM clicks;
END;
