INSERT INTO append_out SELECT page, user_id FROM clicks ORDER BY ts;
