-- The claim of parked first attempts whose lane freed, in one call sent
-- outside a transaction block (the call is its transaction): $1 the
-- parked deliveries, $2 the lease. One row a given delivery claimed (its
-- columns) or whose lane is still finishing (`id` NULL), as
-- motor_claim_freed (migration 0031) answers.
SELECT head AS "head?", following_parked AS "following_parked?", id AS "id?",
       subscription_id AS "subscription_id?", app_id AS "app_id?",
       instance_id AS "instance_id?", event_id AS "event_id?", lane AS "lane?",
       seq AS "seq?", replay_of AS "replay_of?", created_at AS "created_at?",
       lease_until AS "lease_until?", url AS "url?", ordered AS "ordered?",
       max_per_second AS "max_per_second?",
       subscription_version AS "subscription_version?", envelope AS "envelope?",
       attempts_made AS "attempts_made?"
FROM motor_claim_freed($1::uuid[], $2::interval)
