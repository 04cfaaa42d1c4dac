-- The group commit of delivered attempts in one call, sent outside a
-- transaction block (the call is its transaction): $1–$7 as
-- record_delivered_many.sql, $8 those of the ids that claim a next, $9
-- the next one's lease. One row per recorded head, as
-- next_after_many.sql answers (migration 0024 runs the two).
SELECT out_head AS "head?", out_following_parked AS "following_parked?", out_id AS "id?",
       out_subscription_id AS "subscription_id?", out_app_id AS "app_id?",
       out_instance_id AS "instance_id?", out_event_id AS "event_id?", out_lane AS "lane?",
       out_seq AS "seq?", out_replay_of AS "replay_of?", out_created_at AS "created_at?",
       out_lease_until AS "lease_until?", out_url AS "url?", out_ordered AS "ordered?",
       out_max_per_second AS "max_per_second?",
       out_subscription_version AS "subscription_version?", out_envelope AS "envelope?",
       out_attempts_made AS "attempts_made?"
FROM motor_record_delivered($1::uuid[], $2::int[], $3::int[], $4::timestamptz[], $5::int[],
                            $6::text[], $7::timestamptz[], $8::uuid[], $9::interval)
