INSERT INTO page_users SELECT page, COUNT(DISTINCT user_id) FILTER (WHERE referrer IS NOT NULL) FROM clicks GROUP BY page;
