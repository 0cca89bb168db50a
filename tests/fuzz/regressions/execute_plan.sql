CREATE TABLE src (a BIGINT, b STRING, ts TIMESTAMP(3)) WITH ('connector' = 'datagen');
CREATE TABLE snk (a BIGINT) WITH ('connector' = 'blackhole');
EXECUTE PLAN '/nonexistent/plan.json';
INSERT INTO snk SELECT a FROM src;
