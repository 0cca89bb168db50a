CREATE FUNCTION weighted_avg AS 'tests.golden.udfs.WeightedAvg' LANGUAGE PYTHON;
INSERT INTO page_views SELECT page, weighted_avg(user_id, CAST(CHAR_LENGTH(referrer) AS BIGINT)) FROM clicks GROUP BY page;
