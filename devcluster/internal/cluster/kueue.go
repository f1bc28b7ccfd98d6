package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"longtask.dev/devcluster/internal/pki"
)

// KueueProc is the component name of Kueue's manager in state.json, logs
// and `restart`; also the internal command that starts it (KueueManagerMain).
const KueueProc = "kueue-manager"

const (
	kueueNamespace      = "kueue-system"
	kueueServiceAccount = "kueue-controller-manager"
	// The devcluster, not Kueue, is the field manager of what it applies.
	kueueFieldManager = "devcluster"
	// Kueue's manager reads its metrics serving certificate from this fixed
	// path when its internal certificate management is off (where Kueue's
	// cert-manager overlay mounts the certificate's Secret).
	kueueMetricsCertDir = "/etc/kueue/metrics/certs"
	// No --service-account-max-token-expiration is set, so the API server
	// grants this lifetime and the manager needs no token refresher.
	kueueTokenTTL = 365 * 24 * 3600
)

// KueueState is what `kueue` records in state.json: the loopback ports of
// Kueue's manager, kept while it runs so a second `kueue` changes nothing.
type KueueState struct {
	Version     string `json:"version"`
	WebhookPort int    `json:"webhookPort"`
	HealthPort  int    `json:"healthPort"`
	MetricsPort int    `json:"metricsPort"`
}

// KueueOptions are the flags of `kueue`.
type KueueOptions struct {
	Dir string
	// BinDir holds what devcluster/kueue/build made: kueue, manifests.yaml
	// and version.
	BinDir  string
	Timeout time.Duration
}

// Kueue installs Kueue on the running devcluster in o.Dir, as Kueue's own
// manifests would (CRDs, namespace, RBAC, webhooks), starts its manager as a
// host process with the identity of Kueue's ServiceAccount, and returns once
// its webhooks answer. Run again, it re-applies the manifests and leaves a
// running manager alone.
func Kueue(o KueueOptions) (string, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return "", err
	}
	st, err := loadState(dir)
	if err != nil {
		return "", err
	}
	if st == nil || !procAlive(st, "apiserver") {
		return "", fmt.Errorf("no devcluster runs in %s: run `devcluster up --dir %s` first", dir, dir)
	}
	version, err := os.ReadFile(filepath.Join(o.BinDir, "version"))
	if err != nil {
		return "", fmt.Errorf("Kueue is not built (run devcluster/kueue/build): %w", err)
	}
	manifests, err := os.ReadFile(filepath.Join(o.BinDir, "manifests.yaml"))
	if err != nil {
		return "", err
	}
	objs, err := parseManifests(manifests)
	if err != nil {
		return "", fmt.Errorf("parse Kueue's manifests: %w", err)
	}
	kdir := filepath.Join(dir, "kueue")
	f := pki.In(filepath.Join(dir, "pki"))
	alreadyUp := procAlive(st, KueueProc) && st.Kueue != nil
	if !alreadyUp {
		if err := os.MkdirAll(filepath.Join(kdir, "certs"), 0o700); err != nil {
			return "", err
		}
		got, err := pickPorts(3)
		if err != nil {
			return "", fmt.Errorf("find free loopback ports: %w", err)
		}
		st.Kueue = &KueueState{Version: strings.TrimSpace(string(version)), WebhookPort: got[0], HealthPort: got[1], MetricsPort: got[2]}
		if err := kueueServingCert(filepath.Join(dir, "pki"), filepath.Join(kdir, "certs")); err != nil {
			return "", err
		}
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return "", err
	}
	objs, err = adaptKueue(objs, fmt.Sprintf("https://127.0.0.1:%d", st.Kueue.WebhookPort), caPEM)
	if err != nil {
		return "", err
	}

	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return "", err
	}
	// About 60 objects and the discovery behind them: client-go's default
	// 5 requests/s would take most of the time.
	cfg.QPS, cfg.Burst = 100, 200
	a, err := newApplier(cfg)
	if err != nil {
		return "", err
	}
	// CRDs and the namespace first: Kueue's manager watches its kinds from
	// the start.
	var first, rest []*unstructured.Unstructured
	for _, obj := range objs {
		if k := obj.GetKind(); k == "CustomResourceDefinition" || k == "Namespace" {
			first = append(first, obj)
		} else {
			rest = append(rest, obj)
		}
	}
	if err := a.apply(ctx, first); err != nil {
		return "", err
	}
	if err := a.waitEstablished(ctx, first); err != nil {
		return "", err
	}
	// Discovery now serves Kueue's kinds.
	a.mapper.Reset()
	if err := a.apply(ctx, rest); err != nil {
		return "", err
	}

	var r *running
	if !alreadyUp {
		if r, err = startKueue(ctx, st, o.BinDir, kdir, a.cs, caPEM); err != nil {
			return "", err
		}
	}
	if err := st.save(); err != nil {
		return "", err
	}
	if err := a.waitKueueReady(ctx, st.Kueue.HealthPort, r); err != nil {
		if r != nil {
			stop(r.proc.Pid, dir, 10*time.Second)
		}
		return "", err
	}
	return st.Kueue.Version, nil
}

func procAlive(st *State, name string) bool {
	for _, p := range st.Procs {
		if p.Name == name && alive(p.Pid, st.Dir) {
			return true
		}
	}
	return false
}

// kueueServingCert issues the manager's serving certificate (webhooks and
// metrics, on 127.0.0.1) from the cluster CA, as tls.crt and tls.key in
// dst, the names controller-runtime reads.
func kueueServingCert(pkiDir, dst string) error {
	certPath, keyPath, err := pki.Issue(pkiDir, pki.Cert{
		Name: "kueue-webhook", CommonName: "kueue-webhook",
		IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true,
	})
	if err != nil {
		return err
	}
	for src, name := range map[string]string{certPath: "tls.crt", keyPath: "tls.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// startKueue writes the manager's configuration and a kubeconfig with a
// token of Kueue's ServiceAccount (bound by Kueue's own RBAC), and starts it.
func startKueue(ctx context.Context, st *State, binDir, kdir string, cs kubernetes.Interface, caPEM []byte) (*running, error) {
	tr, err := cs.CoreV1().ServiceAccounts(kueueNamespace).CreateToken(ctx, kueueServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](kueueTokenTTL)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for ServiceAccount %s/%s: %w", kueueNamespace, kueueServiceAccount, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["devcluster"] = &clientcmdapi.Cluster{Server: st.APIServer, CertificateAuthorityData: caPEM}
	kc.AuthInfos[kueueServiceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["kueue"] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: kueueServiceAccount, Namespace: kueueNamespace}
	kc.CurrentContext = "kueue"
	kubeconfig := filepath.Join(kdir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return nil, err
	}
	config := filepath.Join(kdir, "config.yaml")
	k := st.Kueue
	body := fmt.Sprintf(kueueConfig, k.HealthPort, k.MetricsPort, k.WebhookPort, filepath.Join(kdir, "certs"))
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		return nil, err
	}
	return spawn(st, KueueProc, []string{
		"--bin=" + filepath.Join(binDir, "kueue"),
		"--certs=" + filepath.Join(kdir, "certs"),
		"--",
		"--config=" + config,
		"--kubeconfig=" + kubeconfig,
		// As Kueue's Deployment runs it.
		"--zap-log-level=2",
	})
}

// kueueConfig is Kueue's Configuration: its defaults from
// config/components/manager, but only the batch/job integration (no other
// framework's CRDs are installed), jobs without a queue name left alone,
// waitForPodsReady off, and on loopback ports with the devcluster's
// certificate instead of Kueue's internal certificate management. One
// instance: no leader election, as for the other components. The visibility
// API server is off: its APIService could not reach it (see adaptKueue).
const kueueConfig = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 50
  burst: 100
integrations:
  frameworks:
  - batch/job
featureGates:
  VisibilityOnDemand: false
`

// applier server-side applies objects of any kind the API server serves.
type applier struct {
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(cfg *rest.Config) (*applier, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &applier{cs: cs, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

func (a *applier) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource).Namespace(namespace), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

func (a *applier) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		where := o.GetKind() + " " + o.GetName()
		ri, err := a.resource(o.GroupVersionKind(), o.GetNamespace())
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			FieldManager: kueueFieldManager, Force: ptr.To(true),
		}); err != nil {
			return fmt.Errorf("apply %s: %w", where, err)
		}
	}
	return nil
}

// waitEstablished waits until every CRD among objs is Established.
func (a *applier) waitEstablished(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		ri, err := a.resource(o.GroupVersionKind(), "")
		if err != nil {
			return err
		}
		if err := poll(ctx, "CRD "+o.GetName()+" Established", nil, func() error {
			crd, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if cm, ok := c.(map[string]any); ok && cm["type"] == "Established" && cm["status"] == "True" {
					return nil
				}
			}
			return errors.New("not Established")
		}); err != nil {
			return err
		}
	}
	return nil
}

// waitKueueReady waits until Kueue's manager reports ready and its webhooks
// answer the API server: a dry-run create of a ResourceFlavor passes both.
func (a *applier) waitKueueReady(ctx context.Context, healthPort int, r *running) error {
	rf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2",
		"kind":       "ResourceFlavor",
		"metadata":   map[string]any{"name": "devcluster-ready-check"},
	}}
	ri, err := a.resource(rf.GroupVersionKind(), "")
	if err != nil {
		return err
	}
	c := &http.Client{Timeout: 5 * time.Second}
	return poll(ctx, "Kueue's webhooks to answer", r, func() error {
		if err := httpOK(c, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)); err != nil {
			return err
		}
		_, err := ri.Create(ctx, rf, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// poll retries check until it succeeds or ctx ends; if r is a component
// started for this, its exit ends the wait with the end of its log.
func poll(ctx context.Context, what string, r *running, check func() error) error {
	var exited chan error
	if r != nil {
		exited = r.exited
	}
	for {
		last := check()
		if last == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("%s exited while waiting for %s (%v); end of %s:\n%s", r.proc.Name, what, err, r.proc.Log, tail(r.proc.Log, 25))
		case <-ctx.Done():
			msg := fmt.Sprintf("timed out waiting for %s (last error: %v)", what, last)
			if r != nil {
				msg += fmt.Sprintf("; end of %s:\n%s", r.proc.Log, tail(r.proc.Log, 25))
			}
			return errors.New(msg)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
