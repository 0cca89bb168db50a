INSERT INTO append_out SELECT u.name, c.user_id FROM clicks AS c JOIN users FOR SYSTEM_TIME AS OF c.proc AS u ON c.user_id = u.user_id;
