INSERT INTO page_views SELECT referrer, COUNT(*) FROM clicks GROUP BY page, referrer;
