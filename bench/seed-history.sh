#!/bin/sh
# seed-history.sh DB DAYS [PROJECTS] — writes DAYS of made-up usage history
# into the usage table of a gpupool store (created by a first start of
# gpupoold, stopped before this runs), for the console's screenshots and the
# API benchmark: hour buckets for DAYS days and minute buckets for the last
# two, per project, per department (the sum of its projects), per user and
# per node. PROJECTS is "project:department:base:peak:busy ..." (GPUs held at
# night and at the weekday peak, and the busy share); the default is the
# pool of tests/console. Office hours peak at 13:00; weekends are quiet.
set -eu
db=$1
days=$2
projects=${3:-"nlp:research:1:3:0.35 vision:research:0.5:2:0.5 infra:ops:0.5:1:0.6"}
values=""
for p in $projects; do
    IFS=: read -r name dept base peak busy <<EOT
$p
EOT
    values="$values${values:+,}('$name','$dept',$base,$peak,$busy)"
done
sqlite3 "$db" >/dev/null <<SQL
PRAGMA busy_timeout = 10000;
BEGIN;
CREATE TEMP TABLE p(key TEXT, dept TEXT, base REAL, peak REAL, busy REAL);
INSERT INTO p VALUES $values;
CREATE TEMP TABLE g(res INTEGER, ts INTEGER, key TEXT, dept TEXT, alloc REAL, busy REAL);
WITH RECURSIVE
  now(h) AS (SELECT CAST(strftime('%s', 'now') AS INTEGER) / 3600 * 3600),
  hours(t) AS (SELECT h - $days * 86400 FROM now UNION ALL SELECT t + 3600 FROM hours, now WHERE t + 3600 < h),
  mins(t) AS (SELECT h - 2 * 86400 FROM now UNION ALL SELECT t + 60 FROM mins, now WHERE t + 60 < h)
INSERT INTO g
SELECT res, t, key, dept,
       (base + (peak - base) * max(0, 6 - abs((t / 3600) % 24 - 13)) / 6.0
             * (CASE WHEN (t / 86400 + 4) % 7 >= 5 THEN 0.2 ELSE 1 END)) * res, busy
FROM (SELECT 3600 AS res, t FROM hours UNION ALL SELECT 60, t FROM mins), p;
INSERT OR REPLACE INTO usage(res, kind, ts, key, alloc, used, measured, borrowed, lent)
  SELECT res, 0, ts, key, alloc, alloc * busy, alloc, 0, 0 FROM g
  UNION ALL
  SELECT res, 0, ts, dept, sum(alloc), sum(alloc * busy), sum(alloc), 0, 0 FROM g GROUP BY res, ts, dept
  UNION ALL
  SELECT res, 1, ts, 'user-' || key, alloc, alloc * busy, alloc, 0, 0 FROM g
  UNION ALL
  SELECT res, 2, ts, 'local', sum(alloc), sum(alloc * busy), sum(alloc), 0, 0 FROM g GROUP BY res, ts;
COMMIT;
SQL
