CREATE TABLE w (ts TIMESTAMP(3), WATERMARK FOR AS ts) WITH ('connector' = 'blackhole');
