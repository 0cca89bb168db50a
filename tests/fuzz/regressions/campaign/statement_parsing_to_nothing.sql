CREATE TABLE source_t (
  a STRING,
  b INT,
  c STRING,
  PRIMARY KEY(a) NOT ENFORCED
) WITH ('connector' = 'filesystem', 'path' = '/data/fuzz/source_t', 'format' = 'changelog-json', 'changelog-mode' = 'I,UB,UA,D');
CREATE TABLE sink_t (
  a STRING,
  b INT,
  c STRING,
  PRIMARY KEY(a) NOT ENFORCED
) WITH ('connector' = 'filesystem', 'path' = '/data/fuzz/sink_t', 'format' = 'changelog-json');

ELSE INTO sink_t SELECT a, b, c FROM source_t WHERE b < 10;