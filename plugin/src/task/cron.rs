//! CronTasks as `get`, `crons` and `trigger` read and show them: the
//! namespace's API, one by name, all of them, and their table with the
//! next run.

use crds::cron::CronTask;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};

use crate::client::{Error, Kube};
use crate::show;

/// The CronTasks of `k`'s namespace.
pub fn crons(k: &Kube) -> Api<CronTask> {
    Api::namespaced(k.client.clone(), &k.namespace)
}

/// The CronTask `name`, if there is one.
pub async fn get_opt(k: &Kube, name: &str) -> Result<Option<CronTask>, Error> {
    crons(k)
        .get_opt(name)
        .await
        .map_err(|e| Error::api("get", "crontasks", &k.namespace, Some(name), e))
}

/// Every CronTask of the namespace (or all), by namespace and name.
pub async fn list_all(k: &Kube, all_namespaces: bool) -> Result<Vec<CronTask>, Error> {
    let api: Api<CronTask> = if all_namespaces {
        Api::all(k.client.clone())
    } else {
        crons(k)
    };
    let mut items = api
        .list(&Default::default())
        .await
        .map_err(|e| Error::api("list", "crontasks", &k.namespace, None, e))?
        .items;
    items.sort_by_key(|c| (c.namespace(), c.name_any()));
    Ok(items)
}

/// The `crons` table (pure): ages and waits as `get` prints them.
pub fn table(items: &[CronTask], namespaces: bool, now: Timestamp) -> String {
    let mut header = vec![
        "NAME",
        "SCHEDULE",
        "TIMEZONE",
        "SUSPENDED",
        "ACTIVE",
        "LAST",
        "NEXT",
    ];
    if namespaces {
        header.insert(0, "NAMESPACE");
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|c| {
            let st = c.status.clone().unwrap_or_default();
            let next = st
                .next_schedule_times
                .first()
                .and_then(|t| t.parse::<Timestamp>().ok())
                .map_or("-".to_owned(), |t| {
                    format!(
                        "{t} (in {})",
                        show::human(-show::seconds_since(now, &Time(t)))
                    )
                });
            let mut row = vec![
                c.name_any(),
                c.spec.all_schedules().collect::<Vec<_>>().join("; "),
                c.spec.time_zone.clone().unwrap_or_else(|| "UTC".to_owned()),
                c.spec.suspend.to_string(),
                st.active_count.to_string(),
                st.last_schedule_time.map_or("-".to_owned(), |t| {
                    show::human(show::seconds_since(now, &t))
                }),
                next,
            ];
            if namespaces {
                row.insert(0, c.namespace().unwrap_or_default());
            }
            row
        })
        .collect();
    show::table(&header, &rows)
}
