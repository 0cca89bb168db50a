INSERT INTO changelog_out SELECT page, user_id FROM clicks UNION SELECT currency, order_id FROM orders;
