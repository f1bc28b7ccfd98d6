package cluster

import (
	"fmt"
	"path/filepath"
	"strings"

	"longtask.dev/devcluster/internal/pki"
)

// Controllers the controller-manager runs on process nodes: what Jobs,
// Deployments, garbage collection, namespaces and service accounts need.
// Node lifecycle is left out: these nodes live exactly as long as the agent
// process, and it renews no lease.
var controllers = []string{
	"job-controller", "garbage-collector-controller", "ttl-after-finished-controller",
	"serviceaccount-controller", "serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller", "namespace-controller",
	"pod-garbage-collector-controller", "deployment-controller", "replicaset-controller",
	"clusterrole-aggregation-controller", "validatingadmissionpolicy-status-controller",
}

// allControllers is the controller-manager's own default set, as on a
// kubeadm cluster: with container nodes it runs every controller a real
// cluster runs, among them node-lifecycle (NotReady, the not-ready and
// unreachable taints), taint-eviction (NoExecute taints evict), disruption
// (PodDisruptionBudgets, which evictions and `kubectl drain` consult) and
// endpointslice (Services reach pods). Those that need a cloud provider or
// flags not given here (node-ipam, service-lb, CSR signing) start idle.
const allControllers = "*"

// Node monitoring on container nodes, half of Kubernetes' defaults so that
// a dead node is noticed in about 25 s rather than 50 s, with the same
// ratios: the controller gives a node five lease renewals (grace 25 s
// against the kubelet's 20 s lease, renewed every 5 s; defaults 50 s and 40 s
// renewed every 10 s) and looks every 2 s (default 5 s).
// The kubelet's side is cnode.NodeLeaseSeconds.
const (
	nodeMonitorGracePeriod = "25s"
	nodeMonitorPeriod      = "2s"
)

type ports struct {
	EtcdClient, EtcdPeer, APIServer, ControllerManager, Scheduler int
}

func etcdArgs(dir string, p ports) []string {
	return []string{
		"--data-dir=" + filepath.Join(dir, "etcd"),
		fmt.Sprintf("--client-url=http://127.0.0.1:%d", p.EtcdClient),
		fmt.Sprintf("--peer-url=http://127.0.0.1:%d", p.EtcdPeer),
	}
}

// apiServerArgs are kube-apiserver's flags. On process nodes it serves
// loopback only; with container nodes (c not nil) it serves the host's end
// of the cluster bridge, so pods reach it through the kubernetes Service,
// and it calls kubelets with a client certificate.
func apiServerArgs(dir string, p ports, f pki.Files, audit, profiling bool, c *containerFlags) []string {
	addr := "127.0.0.1"
	if c != nil {
		addr = c.address
	}
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", p.EtcdClient),
		"--bind-address=" + addr,
		"--advertise-address=" + addr,
		fmt.Sprintf("--secure-port=%d", p.APIServer),
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--tls-cert-file=" + f.ServerCert,
		"--tls-private-key-file=" + f.ServerKey,
		"--client-ca-file=" + f.CA,
		// Delegated authentication in the controller-manager and scheduler
		// reads this CA back; nothing here proxies with request headers.
		"--requestheader-client-ca-file=" + f.CA,
		"--requestheader-allowed-names=devcluster-front-proxy",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + f.SAPub,
		"--service-account-signing-key-file=" + f.SAKey,
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// /debug/pprof on the secure port, for cluster-admin (up --profiling).
		fmt.Sprintf("--profiling=%t", profiling),
		"--kubelet-preferred-address-types=InternalIP",
		"--v=1",
	}
	if c == nil {
		// Endpoints may not hold loopback addresses, and nothing on process
		// nodes routes to the kubernetes Service anyway.
		args = append(args, "--endpoint-reconciler-type=none", "--authorization-mode=RBAC")
	} else {
		args = append(args,
			"--authorization-mode=Node,RBAC",
			"--enable-admission-plugins=NodeRestriction",
			"--kubelet-client-certificate="+c.kubeletClientCert,
			"--kubelet-client-key="+c.kubeletClientKey)
	}
	if audit {
		args = append(args,
			"--audit-policy-file="+filepath.Join(dir, "audit-policy.yaml"),
			"--audit-log-path="+filepath.Join(dir, "logs", "audit.log"),
			"--audit-log-format=json",
			"--audit-log-mode=batch",
			"--audit-log-batch-max-wait=1s")
	}
	return args
}

// auditPolicy records who wrote what: metadata of every mutating request.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// containerFlags are what the control plane needs for container nodes.
type containerFlags struct {
	address                             string // the host's address on the cluster bridge
	kubeletClientCert, kubeletClientKey string
}

func controllerManagerArgs(kubeconfig string, p ports, f pki.Files, containers bool) []string {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", p.ControllerManager),
		"--service-account-private-key-file=" + f.SAKey,
		"--root-ca-file=" + f.CA,
		"--use-service-account-credentials=true",
		"--concurrent-job-syncs=10",
		// The defaults (20 QPS, burst 30) are shared by each controller's
		// own client: the Job controller makes about five calls per Job
		// (pod create, finalizer removal, three status updates), so 20 QPS
		// held a burst of Jobs to ~3.7 pods/s while the CPUs idled.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--v=1",
	}
	if !containers {
		return append(args, "--controllers="+strings.Join(controllers, ","))
	}
	return append(args,
		"--controllers="+allControllers,
		"--node-monitor-grace-period="+nodeMonitorGracePeriod,
		"--node-monitor-period="+nodeMonitorPeriod)
}

func schedulerArgs(kubeconfig string, p ports) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", p.Scheduler),
		"--v=1",
	}
}
