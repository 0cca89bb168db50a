INSERT INTO page_views SELECT page, COUNT(*) FROM clicks GROUP BY page;
