//! Property tests of the result format: any ConfigMap data reads as a
//! result or a named format error, never a panic; what the worker writes
//! reads back the same; truncation never splits a character.

use std::collections::BTreeMap;

use crds::result::{FormatError, TaskResult, keys, truncate_utf8};
use proptest::collection::btree_map;
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => ".{0,40}",
        1 => (any::<char>(), 0usize..3_000_000).prop_map(|(c, n)| c.to_string().repeat(n)),
    ]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_data_reads_or_names_the_key(
        data in btree_map(
            prop_oneof![
                Just(keys::RESULT.to_owned()),
                Just(keys::EXIT_CODE.to_owned()),
                Just(keys::RESULT_SIZE.to_owned()),
                Just(keys::MESSAGE.to_owned()),
                Just(keys::LOG_TAIL.to_owned()),
                ".{0,8}",
            ],
            prop_oneof![
                "-?[0-9]{1,12}",
                Just(i32::MIN.to_string()),
                Just(u64::MAX.to_string()),
                " 7 |NaN|0x10|1e3|",
                text(),
            ],
            0..7,
        )
    ) {
        match TaskResult::from_data(&data) {
            Ok(r) => {
                prop_assert_eq!(Some(r.exit_code), data[keys::EXIT_CODE].trim().parse().ok());
                prop_assert_eq!(Some(&r.result).filter(|r| !r.is_empty()), data.get(keys::RESULT).filter(|r| !r.is_empty()));
            }
            Err(FormatError::MissingKey(k)) => {
                prop_assert_eq!(k, keys::EXIT_CODE);
                prop_assert!(!data.contains_key(k));
            }
            Err(FormatError::BadValue(k, v)) => {
                prop_assert!(k == keys::EXIT_CODE || k == keys::RESULT_SIZE);
                prop_assert!(v.len() <= 64, "the quoted value is cut: {}", v.len());
            }
        }
    }

    #[test]
    fn written_results_read_back(
        result in text(),
        exit_code in any::<i32>(),
        message in ".{0,50}",
        log_tail in ".{0,50}",
    ) {
        let r = TaskResult {
            result_size: result.len(),
            result,
            exit_code,
            finished_at: "2024-01-01T00:00:00Z".into(),
            message,
            log_tail,
        };
        prop_assert_eq!(TaskResult::from_data(&r.to_data()), Ok(r));
    }

    #[test]
    fn truncation_is_a_prefix_on_a_boundary(s in text(), max in 0usize..4_000_000) {
        let t = truncate_utf8(&s, max);
        prop_assert!(t.len() <= max && s.starts_with(t));
        if s.len() <= max {
            prop_assert_eq!(t, s.as_str());
        } else {
            prop_assert!(max - t.len() < 4, "cut {} bytes more than needed", max - t.len());
        }
    }
}

#[test]
fn empty_data_is_missing_exit_code() {
    assert_eq!(
        TaskResult::from_data(&BTreeMap::new()),
        Err(FormatError::MissingKey(keys::EXIT_CODE))
    );
}
