//! Property tests of the result format: any ConfigMap data reads as a
//! result or a named format error, never a panic; what the worker writes
//! reads back the same (or, past the limit, as too large with its size);
//! gzip values never inflate past the limit; truncation never splits a
//! character.

use std::collections::BTreeMap;

use crds::result::{
    FormatError, MAX_RESULT_BYTES, TaskResult, encodings, gzip, keys, truncate_utf8,
};
use k8s_openapi::ByteString;
use proptest::collection::btree_map;
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => ".{0,40}",
        1 => (any::<char>(), 0usize..3_000_000).prop_map(|(c, n)| c.to_string().repeat(n)),
    ]
}

/// A gzip value: of a small or a huge (bomb) result, cut, or garbage.
fn gzip_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        ".{0,40}".prop_map(|s| gzip(s.as_bytes())),
        (0usize..3_000_000).prop_map(|n| gzip(&vec![b'x'; n])),
        (".{1,40}", 0usize..30).prop_map(|(s, cut)| {
            let g = gzip(s.as_bytes());
            g[..g.len().saturating_sub(cut)].to_vec()
        }),
        proptest::collection::vec(any::<u8>(), 0..64),
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
                Just(keys::RESULT_ENCODING.to_owned()),
                ".{0,8}",
            ],
            prop_oneof![
                "-?[0-9]{1,12}",
                Just(i32::MIN.to_string()),
                Just(u64::MAX.to_string()),
                " 7 |NaN|0x10|1e3|",
                Just(encodings::PLAIN.to_owned()),
                Just(encodings::GZIP.to_owned()),
                Just(encodings::OMITTED.to_owned()),
                text(),
            ],
            0..8,
        ),
        gz in gzip_value(),
    ) {
        let binary = BTreeMap::from([(keys::RESULT_GZIP.to_owned(), ByteString(gz))]);
        let plain = matches!(
            data.get(keys::RESULT_ENCODING).map(|e| e.trim()),
            None | Some("" | encodings::PLAIN)
        );
        match TaskResult::from_stored(&data, &binary) {
            Ok(r) => {
                prop_assert_eq!(Some(r.exit_code), data[keys::EXIT_CODE].trim().parse().ok());
                prop_assert!(r.result.len() <= MAX_RESULT_BYTES || plain, "inflated past the limit");
                if plain {
                    let want = data.get(keys::RESULT).map(String::as_bytes).unwrap_or_default();
                    prop_assert_eq!(r.result.as_slice(), want);
                }
            }
            Err(FormatError::MissingKey(k)) => {
                prop_assert_eq!(k, keys::EXIT_CODE);
                prop_assert!(!data.contains_key(k));
            }
            Err(FormatError::BadValue(k, v)) => {
                prop_assert!([keys::EXIT_CODE, keys::RESULT_SIZE, keys::RESULT_ENCODING, keys::RESULT_GZIP].contains(&k), "{}", k);
                prop_assert!(v.len() <= 64, "the quoted value is cut: {}", v.len());
            }
        }
    }

    #[test]
    fn written_results_read_back(
        result in prop_oneof![
            3 => text().prop_map(String::into_bytes),
            1 => proptest::collection::vec(any::<u8>(), 0..2048),
            1 => (any::<u8>(), 0usize..1_200_000).prop_map(|(b, n)| vec![b; n]),
        ],
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
            omitted: false,
        };
        let s = r.to_stored();
        let values: usize = s.data.values().map(String::len).sum::<usize>()
            + s.binary_data.values().map(|b| b.0.len()).sum::<usize>();
        prop_assert!(values < 1024 * 1024, "the ConfigMap would hold {} bytes", values);
        let back = TaskResult::from_stored(&s.data, &s.binary_data);
        if r.too_large() {
            let back = back.map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(back.too_large() && back.result.is_empty());
            prop_assert_eq!(back.result_size, r.result_size);
        } else {
            prop_assert_eq!(back, Ok(r));
        }
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
