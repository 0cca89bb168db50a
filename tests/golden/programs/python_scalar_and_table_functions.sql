CREATE TEMPORARY SYSTEM FUNCTION mask_user AS 'tests.golden.udfs.mask_user' LANGUAGE PYTHON;
CREATE FUNCTION path_parts AS 'tests.golden.udfs.path_parts' LANGUAGE PYTHON;
INSERT INTO append_out SELECT mask_user(user_id), CAST(depth AS BIGINT) FROM clicks, LATERAL TABLE(path_parts(page)) AS T(part, depth);
