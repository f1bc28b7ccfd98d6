//! The end-to-end cases, grouped by what they prove.

mod accounts;
mod apiserver;
mod basics;
mod cancel;
mod chaos;
mod cron;
mod cron_guard;
mod faults;
mod ha;
mod hardening;
mod invalid_spec;
mod observe;
mod plugin;
mod plugin_outputs;
mod plugin_outputs_s3;
mod postmortem;
mod rbac;
mod restart;
mod retention;
mod retry;
mod scale;
mod security;
mod sizes;
mod tenants;
mod validation;
mod waiting;

use crate::Case;
use longtask_e2e::case;

pub static ALL: &[Case] = &[
    case!(cron_runs_on_time, false, cron::cron_runs_on_time),
    case!(cron_forbid_skips, false, cron::cron_forbid_skips),
    case!(cron_replace_cancels, false, cron::cron_replace_cancels),
    case!(
        cron_stop_after_failures,
        false,
        cron::cron_stop_after_failures
    ),
    case!(cron_plugin_commands, false, cron::cron_plugin_commands),
    case!(
        cron_forged_runs_ignored,
        false,
        cron_guard::cron_forged_runs_ignored
    ),
    case!(
        cron_squatted_name_told,
        false,
        cron_guard::cron_squatted_name_told
    ),
    case!(
        cron_max_active_runs_caps,
        false,
        cron_guard::cron_max_active_runs_caps
    ),
    case!(
        cron_catch_up_after_downtime,
        true,
        cron::cron_catch_up_after_downtime
    ),
    case!(
        cron_leader_killed_at_ticks,
        true,
        cron::cron_leader_killed_at_ticks
    ),
    case!(
        tenant_shard_bomb_bounded,
        false,
        accounts::tenant_shard_bomb_bounded
    ),
    case!(
        tenant_borrowed_account_recovers,
        false,
        accounts::tenant_borrowed_account_recovers
    ),
    case!(
        tenant_forged_result_refused,
        false,
        accounts::tenant_forged_result_refused
    ),
    case!(
        tenant_recreated_namespace_inherits_nothing,
        false,
        accounts::tenant_recreated_namespace_inherits_nothing
    ),
    case!(
        collision_forgery_refused,
        false,
        hardening::collision_forgery_refused
    ),
    case!(
        worker_identity_cannot_be_borrowed,
        false,
        hardening::worker_identity_cannot_be_borrowed
    ),
    case!(
        precreated_result_not_taken_over,
        false,
        hardening::precreated_result_not_taken_over
    ),
    case!(
        blocked_task_starts_when_job_goes,
        false,
        hardening::blocked_task_starts_when_job_goes
    ),
    case!(
        conditions_follow_the_phase,
        false,
        hardening::conditions_follow_the_phase
    ),
    case!(
        cancel_before_start_says_so,
        false,
        hardening::cancel_before_start_says_so
    ),
    case!(start_error_is_named, false, hardening::start_error_is_named),
    case!(
        ttl_while_operator_down,
        true,
        hardening::ttl_while_operator_down
    ),
    case!(
        tenant_shard_tamper_refused,
        false,
        tenants::tenant_shard_tamper_refused
    ),
    case!(
        tenant_escapes_made_visible,
        false,
        tenants::tenant_escapes_made_visible
    ),
    case!(
        tenant_progress_message_bounded,
        false,
        tenants::tenant_progress_message_bounded
    ),
    case!(
        tenant_mount_paths_normalised,
        false,
        tenants::tenant_mount_paths_normalised
    ),
    case!(
        tenant_delete_keeps_recreated_task,
        false,
        tenants::tenant_delete_keeps_recreated_task
    ),
    case!(
        tenant_logs_only_job_pods,
        false,
        tenants::tenant_logs_only_job_pods
    ),
    case!(completes_with_result, false, basics::completes_with_result),
    case!(
        retry_evicted_pod_uses_no_retry,
        false,
        retry::evicted_pod_uses_no_retry
    ),
    case!(
        retry_listed_exit_code_fails_at_once,
        false,
        retry::listed_exit_code_fails_at_once
    ),
    case!(
        retry_bad_exit_code_lists_refused,
        false,
        retry::bad_exit_code_lists_refused
    ),
    case!(
        retention_deletes_after_time,
        false,
        retention::retention_deletes_after_time
    ),
    case!(
        retention_keeps_newest,
        false,
        retention::retention_keeps_newest
    ),
    case!(
        exit_code_with_retries,
        false,
        basics::exit_code_with_retries
    ),
    case!(
        timeout_is_deadline_exceeded,
        false,
        basics::timeout_is_deadline_exceeded
    ),
    case!(
        delete_stops_everything,
        false,
        basics::delete_stops_everything
    ),
    case!(bad_input_refused, false, validation::bad_input_refused),
    case!(
        invalid_spec_refused_at_apply,
        false,
        invalid_spec::invalid_spec_refused_at_apply
    ),
    case!(
        invalid_spec_from_the_job_api,
        false,
        invalid_spec::invalid_spec_from_the_job_api
    ),
    case!(
        invalid_spec_leaves_the_queue,
        false,
        invalid_spec::invalid_spec_leaves_the_queue
    ),
    case!(
        operator_runs_with_manifest_rbac,
        false,
        validation::operator_runs_with_manifest_rbac
    ),
    case!(worker_sigkill, false, faults::worker_sigkill),
    case!(result_sizes, false, sizes::result_sizes),
    case!(
        cancel_stops_gracefully,
        false,
        cancel::cancel_stops_gracefully
    ),
    case!(
        unschedulable_and_config_error_visible,
        false,
        waiting::unschedulable_and_config_error_visible
    ),
    case!(
        system_namespace_task_refused,
        false,
        rbac::system_namespace_task_refused
    ),
    case!(
        worker_credentials_confined,
        false,
        security::worker_credentials_confined
    ),
    case!(
        own_account_reads_its_secret_and_stays_confined,
        false,
        security::own_account_reads_its_secret_and_stays_confined
    ),
    case!(
        long_names_write_results,
        false,
        security::long_names_write_results
    ),
    case!(
        log_tail_outlives_the_pod,
        false,
        postmortem::log_tail_outlives_the_pod
    ),
    case!(progress_rises, false, observe::progress_rises),
    case!(events_tell_the_story, false, observe::events_tell_the_story),
    case!(metrics_move, false, observe::metrics_move),
    case!(logs_are_json, false, observe::logs_are_json),
    case!(
        samples_reach_their_end_state,
        false,
        basics::samples_reach_their_end_state
    ),
    case!(
        plugin_logs_follows_retry,
        false,
        plugin::plugin_logs_follows_retry
    ),
    case!(
        plugin_logs_shards_and_tail,
        false,
        plugin::plugin_logs_shards_and_tail
    ),
    case!(
        plugin_run_follow_streams,
        false,
        plugin::plugin_run_follow_streams
    ),
    case!(plugin_run_wait_fails, false, plugin::plugin_run_wait_fails),
    case!(plugin_result_gzip, false, plugin::plugin_result_gzip),
    case!(
        plugin_rerun_completes,
        false,
        plugin::plugin_rerun_completes
    ),
    case!(plugin_cancel_running, false, plugin::plugin_cancel_running),
    case!(
        plugin_delete_finished_keep,
        false,
        plugin::plugin_delete_finished_keep
    ),
    case!(plugin_missing_task, false, plugin::plugin_missing_task),
    case!(
        plugin_result_downloads_outputs,
        false,
        plugin_outputs::plugin_result_downloads_outputs
    ),
    case!(
        plugin_result_refuses_bad_outputs,
        false,
        plugin_outputs::plugin_result_refuses_bad_outputs
    ),
    case!(
        plugin_result_from_seaweedfs,
        false,
        plugin_outputs_s3::plugin_result_from_seaweedfs
    ),
    case!(
        image_pull_failure_visible,
        true,
        waiting::image_pull_failure_visible
    ),
    case!(never_blocks, true, scale::never_blocks),
    case!(result_deleted_unread, true, faults::result_deleted_unread),
    case!(restart_safe, true, restart::restart_safe),
    case!(leader_failover, true, ha::leader_failover),
    case!(
        lease_has_its_own_priority_level,
        false,
        ha::lease_has_its_own_priority_level
    ),
    case!(
        namespaced_install_roles_only,
        true,
        rbac::namespaced_install_roles_only
    ),
    case!(
        leader_killed_in_a_loop,
        true,
        chaos::leader_killed_in_a_loop
    ),
    case!(apiserver_restarted, true, apiserver::apiserver_restarted),
    case!(
        etcd_restarted_under_a_burst,
        true,
        apiserver::etcd_restarted_under_a_burst
    ),
];
