INSERT INTO append_out SELECT o.currency, s.order_id FROM orders o, shipments s WHERE o.order_id = s.order_id AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '4' HOUR;
