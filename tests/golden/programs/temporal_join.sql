INSERT INTO append_out SELECT o.currency, CAST(o.amount * r.rate AS BIGINT) FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.currency = r.currency;
