INSERT INTO append_out SELECT UPPER(page), user_id * 2 FROM clicks WHERE user_id > 10 AND page LIKE '/shop%';
