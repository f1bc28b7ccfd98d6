//! longtask in real containers: the operator and worker images that
//! `tests/images` builds, installed with `kubectl apply -k manifests/` on
//! three container nodes (real kubelets, containerd, runc, kube-proxy; see
//! devcluster/README.md). What only containers can show: who the program
//! runs as, what the runtime refuses, in-cluster API access through the
//! kubernetes Service, pod IPs the API server proxies to, the volumes and
//! limits a kubelet sets up. Filter by substring:
//! `cargo test -p longtask-e2e --test containers -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;
mod chaos;
mod image;
mod network;
mod nodes;

use longtask_e2e::case;
use longtask_e2e::runner::{self, Case, Install, Runtime, Shape};

static ALL: &[Case] = &[
    case!(
        completes_with_result_and_logs,
        false,
        cases::completes_with_result_and_logs
    ),
    case!(
        program_runs_unprivileged,
        false,
        cases::program_runs_unprivileged
    ),
    case!(exit_code_and_retries, false, cases::exit_code_and_retries),
    case!(
        deleting_a_task_kills_its_container,
        false,
        cases::deleting_a_task_kills_its_container
    ),
    case!(restricted_is_enforced, false, cases::restricted_is_enforced),
    case!(
        root_image_refused_by_the_runtime,
        false,
        cases::root_image_refused_by_the_runtime
    ),
    case!(kubelet_pod_features, false, cases::kubelet_pod_features),
    case!(
        metrics_through_the_pod_proxy,
        false,
        cases::metrics_through_the_pod_proxy
    ),
    case!(python_image, false, image::python_image),
    case!(scratch_image, false, image::scratch_image),
    case!(root_image_and_own_uid, false, image::root_image_and_own_uid),
    case!(configmap_volume, false, image::configmap_volume),
    case!(owned_fields_refused, false, image::owned_fields_refused),
    case!(cannot_start_is_named, false, image::cannot_start_is_named),
    case!(
        node_selector_and_toleration,
        true,
        image::node_selector_and_toleration
    ),
    case!(pod_samples, true, image::pod_samples),
    case!(
        operator_pod_deleted_mid_run,
        true,
        cases::operator_pod_deleted_mid_run
    ),
    case!(
        node_dies_under_a_running_task,
        true,
        nodes::node_dies_under_a_running_task
    ),
    case!(
        out_of_service_taint_moves_the_task,
        true,
        nodes::out_of_service_taint_moves_the_task
    ),
    case!(drain_moves_the_task, true, nodes::drain_moves_the_task),
    case!(
        partitioned_node_gets_no_twin,
        true,
        nodes::partitioned_node_gets_no_twin
    ),
    case!(
        leader_cut_off_hands_over,
        true,
        network::leader_cut_off_hands_over
    ),
    case!(faults_at_random, true, chaos::faults_at_random),
    case!(
        task_calls_a_service_by_name,
        false,
        network::task_calls_a_service_by_name
    ),
    case!(
        memory_pressure_eviction_uses_no_retry,
        true,
        nodes::memory_pressure_eviction_uses_no_retry
    ),
];

// Cases call kubectl synchronously (std::process) from async code: enough
// worker threads that those calls never hold up a polling case.
#[tokio::main(worker_threads = 16)]
async fn main() {
    let shape = Shape {
        dir: "e2e-containers",
        nodes: 3,
        cpu: 0,
        install: Install::Operator,
        runtime: Runtime::Containerd,
    };
    runner::main(ALL, shape).await;
}
