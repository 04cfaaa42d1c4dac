-- The group commit of delivered attempts in one call, sent outside a
-- transaction block (the call is its transaction): $1–$7 as
-- record_delivered_many.sql, $8 those of the ids that claim a next, $9
-- the next one's lease. One row per recorded head, as
-- next_after_many.sql answers (migration 0024 runs the two).
SELECT head AS "head?", following_parked AS "following_parked?", id AS "id?",
       subscription_id AS "subscription_id?", app_id AS "app_id?",
       instance_id AS "instance_id?", event_id AS "event_id?", lane AS "lane?",
       seq AS "seq?", replay_of AS "replay_of?", created_at AS "created_at?",
       lease_until AS "lease_until?", url AS "url?", ordered AS "ordered?",
       max_per_second AS "max_per_second?",
       subscription_version AS "subscription_version?", envelope AS "envelope?",
       attempts_made AS "attempts_made?"
FROM motor_record_delivered($1::uuid[], $2::int[], $3::int[], $4::timestamptz[], $5::int[],
                            $6::text[], $7::timestamptz[], $8::uuid[], $9::interval)
