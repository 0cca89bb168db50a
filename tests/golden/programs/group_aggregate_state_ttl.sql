INSERT INTO page_views SELECT /*+ STATE_TTL('clicks' = '1d') */ page, COUNT(*) FROM clicks GROUP BY page;
