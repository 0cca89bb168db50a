CREATE TABLE src (a BIGINT, b STRING, ts TIMESTAMP(3)) WITH ('connector' = 'datagen');
CREATE TABLE snk (a BIGINT) WITH ('connector' = 'blackhole');
CREATE TABLE f (a BIGINT) WITH ('connector' = 'filesystem', 'path' = '', 'format' = 'json');
INSERT INTO f SELECT a FROM src;
