CREATE TABLE e (a INT, b AS) WITH ('connector' = 'blackhole');
