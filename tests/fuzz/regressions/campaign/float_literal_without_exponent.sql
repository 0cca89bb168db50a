CREATE TABLE source_t (
  a BIGINT,
  b DOUBLE
) WITH ('connector' = 'filesystem', 'path' = '/data/fuzz/source_t', 'format' = 'json');
CREATE TABLE sink_t (
  a BIGINT,
  b DOUBLE
) WITH ('connector' = 'filesystem', 'path' = '/data/fuzz/sink_t', 'format' = 'changelog-json');

INSERT INTO sink_t SELECT -1e-INTERVAL 'NaN' SECOND AS huge, a, b FROM source_t WHERE a > CAST(420 AS BIGINT);