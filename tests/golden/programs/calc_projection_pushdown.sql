INSERT INTO append_out SELECT page, user_id FROM plain_clicks WHERE dt = '2026-11-22';
