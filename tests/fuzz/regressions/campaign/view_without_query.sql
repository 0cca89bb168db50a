-- Tables shared by the golden programs. Paths are fixed strings: plans must not depend on the machine.
CREATE TABLE clicks (
  user_id BIGINT,
  page STRING,
  referrer STRING,
  ts TIMESTAMP(3),
  proc AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/data/clicks', 'format' = 'json');
CREATE TABLE plain_clicks (user_id BIGINT, page STRING, referrer STRING, dt STRING)
  PARTITIONED BY (dt) WITH ('connector' = 'filesystem', 'path' = '/data/plain', 'format' = 'parquet');
CREATE TABLE orders (
  order_id BIGINT, user_id BIGINT, currency STRING, amount DECIMAL(10, 2), tags ARRAY<STRING>, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts
) WITH ('connector' = 'filesystem', 'path' = '/data/orders', 'format' = 'json');
CREATE TABLE shipments (order_id BIGINT, carrier STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = '/data/shipments', 'format' = 'json');
CREATE TABLE rates (
  currency STRING, rate DECIMAL(10, 4), ts TIMESTAMP(3), WATERMARK FOR ts AS ts, PRIMARY KEY (currency) NOT ENFORCED
) WITH ('connector' = 'filesystem', 'path' = '/data/rates', 'format' = 'changelog-json', 'changelog-mode' = 'I,UA,D');
CREATE TABLE users (user_id BIGINT, name STRING, country STRING, PRIMARY KEY (user_id) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://db:5432/shop', 'table-name' = 'users',
        'username' = 'reader', 'password' = '${env:PG_PASSWORD}', 'lookup.cache' = 'PARTIAL',
        'lookup.partial-cache.max-rows' = '1000');
CREATE TABLE user_changes (user_id BIGINT, name STRING, country STRING, PRIMARY KEY (user_id) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/data/users-cdc', 'format' = 'debezium-json');
CREATE TABLE generated (id BIGINT, score INT, label STRING)
  WITH ('connector' = 'datagen', 'rows-per-second' = '100', 'fields.id.kind' = 'sequence',
        'fields.id.start' = '1', 'fields.id.end' = '1000');
CREATE TABLE page_views (page STRING, views BIGINT, PRIMARY KEY (page) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://db:5432/shop', 'table-name' = 'page_views');
CREATE TABLE page_users (page STRING, users BIGINT, PRIMARY KEY (page) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/out/page-users', 'format' = 'changelog-json');
CREATE TABLE window_counts (page STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '/out/window-counts', 'format' = 'json');
CREATE TABLE changelog_out (k STRING, v BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '/out/changelog', 'format' = 'changelog-json');
CREATE TABLE append_out (k STRING, v BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '/out/append', 'format' = 'json');
CREATE TABLE wide_out (a STRING, b STRING, c BIGINT, d TIMESTAMP(3))
  WITH ('connector' = 'filesystem', 'path' = '/out/wide', 'format' = 'changelog-json');
CREATE TABLE printed (k STRING, v BIGINT) WITH ('connector' = 'print');
CREATE TABLE discarded (k STRING, v BIGINT) WITH ('connector' = 'blackhole');

CREATE TEMPORARY VIEW shop_clic