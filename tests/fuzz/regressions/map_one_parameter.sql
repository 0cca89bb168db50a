CREATE TABLE m (a MAP<STRING>) WITH ('connector' = 'blackhole');
