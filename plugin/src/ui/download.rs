//! The page's downloads of a Task's output files. A plain link cannot
//! carry the token's header, and fetch() into a blob would hold a 5 GiB
//! file in the browser's memory. So the page first asks, with the header
//! (a POST), for a ticket for one file: the server reads the Task and the
//! download Secret as the user and starts the GET from the store, so every
//! refusal (a right missing, an expired link, the store's answer) reaches
//! the page as JSON. The page then follows a plain link
//! `/download/<ticket>`: 256 random bits, good once, for 60 s. Its answer
//! streams the object into the browser's own download (its progress, no
//! page memory) as an attachment with a safe file name, each byte checked
//! as it passes ([`crate::outputs::checked`]): wrong bytes end the answer
//! before its last chunk, so the browser's download fails instead of
//! keeping a file that looks complete.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;

use super::api::{kube_in, refused};
use super::state::Ui;
use crate::client::Error;
use crate::outputs::{self, Error as OutputError, checked, fetch, grant, select};

/// The URL path a ticket is redeemed at.
pub const PATH_PREFIX: &str = "/download/";

/// What the page asks a ticket for.
#[derive(Deserialize)]
pub struct Wanted {
    file: String,
}

/// POST `/api/tasks/{ns}/{name}/download` `{"file": NAME}`: a ticket's
/// path and the file name the browser should save as.
pub async fn ticket(
    State(ui): State<Arc<Ui>>,
    Path((ns, name)): Path<(String, String)>,
    Json(wanted): Json<Wanted>,
) -> Response {
    match prepare(&ui, &ns, &name, &wanted.file).await {
        Ok(answer) => Json(answer).into_response(),
        Err(e) => refused(&e),
    }
}

async fn prepare(ui: &Ui, ns: &str, name: &str, file: &str) -> Result<serde_json::Value, Error> {
    let k = kube_in(ui, ns);
    let task = k.task(name).await?;
    if !task.is_terminal() {
        let phase = task.status.as_ref().and_then(|s| s.phase);
        return Err(OutputError::Unfinished {
            task: name.to_owned(),
            phase: phase.map_or("not started", |p| p.as_str()).to_owned(),
        }
        .into());
    }
    let files = outputs::files(&task);
    let Some(f) = files.iter().find(|f| f.name == file) else {
        return Err(OutputError::NotListed {
            task: name.to_owned(),
            file: file.to_owned(),
            known: select::known(files),
        }
        .into());
    };
    let links = grant::read(&k.client, &k.namespace, name).await?;
    let answer = fetch::open(&ui.http, links.url(file)?, f).await?;
    let token = ui
        .downloads
        .issue(format!("{ns}/{name}"), f.clone(), answer)?;
    Ok(json!({
        "path": format!("{PATH_PREFIX}{token}"),
        "filename": select::safe_file_name(file),
    }))
}

/// GET `/download/{ticket}`: the object, checked as it streams.
pub async fn redeem(State(ui): State<Arc<Ui>>, Path(token): Path<String>) -> Response {
    let Some(t) = ui.downloads.redeem(&token) else {
        let why = "no such download: each download link works once, within 60 s of the click";
        return (StatusCode::NOT_FOUND, why).into_response();
    };
    let (task, name) = (t.task.clone(), t.file.name.clone());
    let bytes = match checked::checked(t.answer.bytes_stream(), &t.file) {
        Ok(s) => s.inspect(move |r| {
            if let Err(e) = r {
                crate::print::note!("download of output {name:?} of task {task} stopped: {e}");
            }
        }),
        Err(e) => return refused(&e.into()),
    };
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_LENGTH, t.file.size.to_string()),
            (header::CONTENT_DISPOSITION, disposition(&t.file.name)),
            (
                header::HeaderName::from_static("x-longtask-digest"),
                t.file.digest.clone(),
            ),
        ],
        Body::from_stream(bytes),
    )
        .into_response()
}

/// Pure: `attachment` with output `name`'s safe file name, in plain ASCII
/// (`filename`, other characters as `_`) and exact (`filename*`, UTF-8
/// percent-encoded, RFC 6266).
pub fn disposition(name: &str) -> String {
    let safe = select::safe_file_name(name);
    let ascii: String = safe
        .chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String =
        safe.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => char::from(b).to_string(),
                b'!' | b'#' | b'$' | b'&' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|'
                | b'~' => char::from(b).to_string(),
                b => format!("%{b:02X}"),
            })
            .collect();
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_carry_a_safe_name_twice() {
        assert_eq!(
            disposition("plots/loss curve.png"),
            "attachment; filename=\"loss curve.png\"; filename*=UTF-8''loss%20curve.png"
        );
        assert_eq!(
            disposition("x\"\r\nSet-Cookie: a=b"),
            "attachment; filename=\"x___Set-Cookie_ a=b\"; filename*=UTF-8''x___Set-Cookie_%20a%3Db"
        );
        assert_eq!(
            disposition("résumé.pdf"),
            "attachment; filename=\"r_sum_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf"
        );
    }
}
