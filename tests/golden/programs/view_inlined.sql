CREATE TEMPORARY VIEW shop_clicks AS SELECT page, user_id FROM clicks WHERE page LIKE '/shop%';
INSERT INTO page_views SELECT page, COUNT(*) FROM shop_clicks GROUP BY page;
