INSERT INTO page_views SELECT country, COUNT(*) FROM user_changes GROUP BY country;
