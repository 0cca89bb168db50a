-- GROUPING SETS / ROLLUP / CUBE as in Flink: an Expand emits each row once per grouping set (keys outside the
-- set NULL, the set's id in $e), then one group aggregate keyed by every key plus $e; GROUPING_ID reads $e.
CREATE TABLE grouping_out (referrer STRING, page STRING, clicks BIGINT, users BIGINT, gid BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '/out/grouping', 'format' = 'changelog-json');
INSERT INTO grouping_out
SELECT referrer, page, COUNT(*), COUNT(DISTINCT user_id), GROUPING_ID(referrer, page)
FROM clicks GROUP BY CUBE (referrer, page);
