CREATE TABLE s (a STRING, b INT) WITH ('connector' = 'datagen');
CREATE TABLE k (a STRING, b INT) WITH ('connector' = 'blackhole');
INSERT INTO k SELECT /*+ LOOKUP('table'='s', 'capacity'=''x'') */ a, b FROM s;
