-- Two INSERTs read different columns and partitions of one table: merge_scans reads it once (the union of
-- the columns, the disjunction of the partition filters), each INSERT re-applies its own filter above.
EXECUTE STATEMENT SET BEGIN
INSERT INTO append_out SELECT page, user_id FROM plain_clicks WHERE dt = '2024-01-01';
INSERT INTO printed SELECT referrer, CAST(CHAR_LENGTH(page) AS BIGINT) FROM plain_clicks WHERE dt = '2024-01-02';
END;
