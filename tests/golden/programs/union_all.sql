INSERT INTO append_out SELECT page, user_id FROM clicks UNION ALL SELECT currency, order_id FROM orders;
