//! Bad input never panics: any header values, any body, any clock, for
//! every profile — an error or (by chance) a verification, never a crash.

use std::time::{Duration, UNIX_EPOCH};

use motor_receiver::{Profile, Secret};
use proptest::prelude::*;

/// Header values built from the pieces the parsers look for, so that the
/// generator reaches deep into them rather than failing at the first byte.
fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..80),
        proptest::collection::vec(
            prop_oneof![
                Just("t=".to_owned()),
                Just("v1=".to_owned()),
                Just("v1,".to_owned()),
                Just(",".to_owned()),
                Just(" ".to_owned()),
                Just("=".to_owned()),
                Just(".".to_owned()),
                "[0-9]{1,20}",
                "[0-9a-f]{0,70}",
                "[A-Za-z0-9+/=]{0,50}",
                "whk_[0-9a-f]{0,8}",
            ],
            0..12
        )
        .prop_map(|parts| parts.concat().into_bytes()),
    ]
}

const NAMES: [&str; 7] = [
    "x-mw-timestamp",
    "x-mw-delivery-id",
    "x-mw-key-id",
    "x-mw-signature",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn never_panics(
        headers in proptest::collection::vec((proptest::sample::select(NAMES.to_vec()), value()), 0..10),
        body in proptest::collection::vec(any::<u8>(), 0..64),
        secret in "(whsec_)?[A-Za-z0-9+/=!]{0,70}",
        now in any::<u64>(),
    ) {
        let now = UNIX_EPOCH.checked_add(Duration::from_secs(now)).unwrap_or(UNIX_EPOCH);
        let secrets = [Secret::new(secret.clone()), Secret::with_key_id("whk_0a", secret)];
        for profile in Profile::ALL {
            if let Err(e) = profile.verify(&headers, &body, &secrets, now) {
                let status = e.status().as_u16();
                prop_assert!(status == 401 || status == 408);
            }
        }
    }
}
