CREATE TABLE s (
  a STRING,
  b IN T NOT NULL
) WITH ('connector' = 'datagen');
