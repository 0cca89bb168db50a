INSERT INTO append_out SELECT page, user_id FROM clicks LIMIT 10;
