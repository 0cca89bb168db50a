CREATE TABLE src (a BIGINT, b STRING, ts TIMESTAMP(3)) WITH ('connector' = 'datagen');
CREATE TABLE snk (a BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT a FROM src WHERE b = 'café';
