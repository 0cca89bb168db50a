CREATE TABLE k (a INT) WITH ('connector' = 'kafka', 'password' = 'hunter2' 'topic' = 't');
