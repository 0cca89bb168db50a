INSERT INTO append_out SELECT page, user_id FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY proc ASC) AS rn FROM clicks) WHERE rn = 1;
