//! S3's XML answers, read with quick-xml: listings, errors and the result
//! of a batch delete; and the body of a batch delete.
//!
//! Every answer is flat enough to read as a walk of leaf elements: each
//! leaf's text with the path of element names above it, and the end of each
//! element that groups leaves (an object in a listing, an error in a batch
//! delete). Namespaces are ignored (local names only).

use quick_xml::events::Event;

/// Why an answer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum XmlError {
    #[error("the XML is malformed")]
    Malformed(#[source] quick_xml::Error),
    #[error("an entity or character reference in the XML is invalid: &{0};")]
    Reference(String),
    #[error("element {element} holds {text:?}, not a number")]
    Number {
        element: String,
        text: String,
        #[source]
        source: std::num::ParseIntError,
    },
}

/// What the walk reports.
enum Step<'a> {
    /// A leaf element's text, with the names from the root to it.
    Leaf(&'a [String], &'a str),
    /// An element ended; the names from the root to it.
    End(&'a [String]),
}

/// Walks `body`, calling `visit` for each leaf and each element's end.
fn walk(
    body: &str,
    mut visit: impl FnMut(Step<'_>) -> Result<(), XmlError>,
) -> Result<(), XmlError> {
    let mut reader = quick_xml::Reader::from_str(body);
    let mut path: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut leaf = false;
    loop {
        match reader.read_event().map_err(XmlError::Malformed)? {
            Event::Start(e) => {
                path.push(e.local_name().as_ref().to_string());
                text.clear();
                leaf = true;
            }
            Event::Empty(e) => {
                path.push(e.local_name().as_ref().to_string());
                visit(Step::Leaf(&path, ""))?;
                visit(Step::End(&path))?;
                path.pop();
                leaf = false;
            }
            Event::Text(t) => text.push_str(&t.xml10_content()),
            Event::CData(t) => text.push_str(&t.xml10_content()),
            Event::GeneralRef(r) => text.push(resolve(&r)?),
            Event::End(_) => {
                if leaf {
                    visit(Step::Leaf(&path, &text))?;
                }
                visit(Step::End(&path))?;
                path.pop();
                text.clear();
                leaf = false;
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// The character an `&name;` or `&#n;` reference stands for.
fn resolve(r: &quick_xml::events::BytesRef<'_>) -> Result<char, XmlError> {
    let name: &str = r;
    let bad = || XmlError::Reference(name.to_string());
    if let Some(c) = r.resolve_char_ref().map_err(|_| bad())? {
        return Ok(c);
    }
    quick_xml::escape::resolve_xml_entity(name)
        .and_then(|s| s.chars().next())
        .ok_or_else(bad)
}

fn ends_with(path: &[String], tail: &[&str]) -> bool {
    path.len() >= tail.len() && path[path.len() - tail.len()..].iter().eq(tail.iter())
}

/// `Code` and `Message` of an `<Error>` answer (empty when absent).
pub(crate) fn error(body: &str) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    // A body that is not XML (a proxy's page) leaves both empty.
    let _ = walk(body, |step| {
        if let Step::Leaf(path, text) = step {
            if ends_with(path, &["Error", "Code"]) {
                code = text.to_string();
            } else if ends_with(path, &["Error", "Message"]) {
                message = text.to_string();
            }
        }
        Ok(())
    });
    (code, message)
}

/// One page of a ListObjectsV2 answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ListPage {
    pub objects: Vec<(String, u64)>,
    pub prefixes: Vec<String>,
    /// Set when more pages follow.
    pub next_token: Option<String>,
}

/// Reads a ListObjectsV2 answer.
pub(crate) fn list_page(body: &str) -> Result<ListPage, XmlError> {
    let mut page = ListPage::default();
    let (mut key, mut size) = (String::new(), 0u64);
    let mut truncated = false;
    walk(body, |step| {
        match step {
            Step::Leaf(path, text) if ends_with(path, &["Contents", "Key"]) => {
                key = text.to_string();
            }
            Step::Leaf(path, text) if ends_with(path, &["Contents", "Size"]) => {
                size = text.trim().parse().map_err(|source| XmlError::Number {
                    element: "Size".into(),
                    text: text.to_string(),
                    source,
                })?;
            }
            Step::Leaf(path, text) if ends_with(path, &["CommonPrefixes", "Prefix"]) => {
                page.prefixes.push(text.to_string());
            }
            Step::Leaf(path, text) if ends_with(path, &["ListBucketResult", "IsTruncated"]) => {
                truncated = text.trim() == "true";
            }
            Step::Leaf(path, text)
                if ends_with(path, &["ListBucketResult", "NextContinuationToken"]) =>
            {
                page.next_token = Some(text.to_string());
            }
            Step::End(path) if ends_with(path, &["ListBucketResult", "Contents"]) => {
                page.objects.push((std::mem::take(&mut key), size));
                size = 0;
            }
            _ => {}
        }
        Ok(())
    })?;
    if !truncated {
        page.next_token = None;
    }
    Ok(page)
}

/// The `<Error>` entries of a DeleteObjects answer: key, code, message.
pub(crate) fn delete_errors(body: &str) -> Result<Vec<(String, String, String)>, XmlError> {
    let mut errors = Vec::new();
    let mut current = (String::new(), String::new(), String::new());
    walk(body, |step| {
        match step {
            Step::Leaf(path, text) if ends_with(path, &["DeleteResult", "Error", "Key"]) => {
                current.0 = text.to_string();
            }
            Step::Leaf(path, text) if ends_with(path, &["DeleteResult", "Error", "Code"]) => {
                current.1 = text.to_string();
            }
            Step::Leaf(path, text) if ends_with(path, &["DeleteResult", "Error", "Message"]) => {
                current.2 = text.to_string();
            }
            Step::End(path) if ends_with(path, &["DeleteResult", "Error"]) => {
                errors.push(std::mem::take(&mut current));
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(errors)
}

/// The body of a quiet DeleteObjects request for `keys`.
pub(crate) fn delete_body(keys: &[String]) -> String {
    let mut out = String::from(
        "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>",
    );
    for key in keys {
        out.push_str("<Object><Key>");
        out.push_str(&quick_xml::escape::escape(key.as_str()));
        out.push_str("</Key></Object>");
    }
    out.push_str("</Delete>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_with_escaped_keys_prefixes_and_a_next_page() {
        let body = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount>
  <IsTruncated>true</IsTruncated>
  <Contents><Key>p/a&amp;b &lt;1&gt;&#x41;</Key><Size>12</Size><ETag>"x"</ETag></Contents>
  <Contents><Key><![CDATA[p/c]]></Key><Size>0</Size></Contents>
  <CommonPrefixes><Prefix>p/d/</Prefix></CommonPrefixes>
  <NextContinuationToken>tok=</NextContinuationToken>
</ListBucketResult>"#;
        let page = list_page(body).unwrap();
        assert_eq!(
            page.objects,
            vec![("p/a&b <1>A".to_string(), 12), ("p/c".to_string(), 0)]
        );
        assert_eq!(page.prefixes, vec!["p/d/".to_string()]);
        assert_eq!(page.next_token.as_deref(), Some("tok="));
    }

    #[test]
    fn last_page_has_no_token_and_bad_sizes_are_errors() {
        let body = "<ListBucketResult><IsTruncated>false</IsTruncated>\
                    <NextContinuationToken>x</NextContinuationToken></ListBucketResult>";
        assert_eq!(list_page(body).unwrap(), ListPage::default());
        let bad =
            "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>";
        assert!(matches!(list_page(bad), Err(XmlError::Number { .. })));
    }

    #[test]
    fn errors_and_delete_results() {
        let body = "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>";
        assert_eq!(
            error(body),
            (
                "NoSuchBucket".into(),
                "The specified bucket does not exist".into()
            )
        );
        assert_eq!(
            error("<html>bad gateway</html>"),
            (String::new(), String::new())
        );
        let deleted = "<DeleteResult><Deleted><Key>a</Key></Deleted>\
                       <Error><Key>b</Key><Code>AccessDenied</Code><Message>no</Message></Error></DeleteResult>";
        assert_eq!(
            delete_errors(deleted).unwrap(),
            vec![("b".into(), "AccessDenied".into(), "no".into())]
        );
    }

    #[test]
    fn delete_body_escapes_keys() {
        assert_eq!(
            delete_body(&["a&<b>".to_string()]),
            "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>\
             <Object><Key>a&amp;&lt;b&gt;</Key></Object></Delete>"
        );
    }
}
