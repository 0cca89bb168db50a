CREATE TABLE w (ts TIMESTAMP(3), WATERMARK FOR ts AS) WITH ('connector' = 'blackhole');
