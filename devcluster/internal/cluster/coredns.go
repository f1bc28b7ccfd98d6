package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"longtask.dev/devcluster/internal/cnode"
)

// CoreDNSProc is the cluster DNS's component name in state.json, logs and
// `restart`; also the internal command that runs it (CoreDNSMain).
const CoreDNSProc = "coredns"

// corednsBinEnv names the directory of the CoreDNS build; the devcluster
// wrapper script builds it (devcluster/coredns/build) and sets it.
const corednsBinEnv = "DEVCLUSTER_COREDNS_BIN"

const (
	dnsNamespace = "kube-system"
	// kubeadm's names: the Service pods' resolv.conf points at, the
	// ServiceAccount and ClusterRole CoreDNS's kubernetes plugin reads with.
	dnsService        = "kube-dns"
	dnsServiceAccount = "coredns"
	dnsClusterRole    = "system:coredns"
	dnsTokenTTL       = 365 * 24 * 3600
)

// corednsBin returns the CoreDNS program the wrapper script built.
func corednsBin() (string, error) {
	d := os.Getenv(corednsBinEnv)
	if d == "" {
		return "", fmt.Errorf("%s is not set: run devcluster through devcluster/devcluster, which builds devcluster/coredns", corednsBinEnv)
	}
	bin := filepath.Join(d, "coredns")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("container nodes need CoreDNS (build it with devcluster/coredns/build): %w", err)
	}
	return bin, nil
}

// startDNS gives container nodes their cluster DNS: CoreDNS as a host
// process serving the host's end of the cluster bridge (port 53), reading
// Services and pods with a token of ServiceAccount kube-system/coredns under
// kubeadm's ClusterRole system:coredns, behind the Service kube-system/kube-dns
// at cnode.ClusterDNS (the kubelets' clusterDNS), whose one endpoint is that
// address, as the kubernetes Service's is the API server's. Like the API
// server it runs beside the nodes, so a node's fault never takes it down.
// It returns the process and the port of CoreDNS's ready endpoint.
func startDNS(ctx context.Context, st *State, cs kubernetes.Interface, caPEM []byte) (*running, int, error) {
	bin, err := corednsBin()
	if err != nil {
		return nil, 0, err
	}
	if err := applyDNSObjects(ctx, cs, st.Net.Gateway().String()); err != nil {
		return nil, 0, err
	}
	tr, err := cs.CoreV1().ServiceAccounts(dnsNamespace).CreateToken(ctx, dnsServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](dnsTokenTTL)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("token for ServiceAccount %s/%s: %w", dnsNamespace, dnsServiceAccount, err)
	}
	ddir := filepath.Join(st.Dir, "coredns")
	if err := os.MkdirAll(ddir, 0o700); err != nil {
		return nil, 0, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["devcluster"] = &clientcmdapi.Cluster{Server: st.APIServer, CertificateAuthorityData: caPEM}
	kc.AuthInfos[dnsServiceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["coredns"] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: dnsServiceAccount}
	kc.CurrentContext = "coredns"
	kubeconfig := filepath.Join(ddir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return nil, 0, err
	}
	ports, err := pickPorts(2)
	if err != nil {
		return nil, 0, err
	}
	corefile := filepath.Join(ddir, "Corefile")
	if err := os.WriteFile(corefile, []byte(corefileFor(st.Net.Gateway().String(), kubeconfig, ports[0], ports[1])), 0o644); err != nil {
		return nil, 0, err
	}
	r, err := spawn(st, CoreDNSProc, []string{"--bin=" + bin, "--", "-conf", corefile})
	return r, ports[1], err
}

// corefileFor is kubeadm's Corefile for cluster.local, less what needs an
// upstream resolver (forward, loop): nothing outside the cluster resolves
// here, so names outside its zones get REFUSED at once rather than a
// timeout. Health and readiness on loopback; DNS on the bridge address only,
// so clusters side by side each have their own port 53.
func corefileFor(addr, kubeconfig string, health, ready int) string {
	return fmt.Sprintf(`cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %s
    errors
    health 127.0.0.1:%d
    ready 127.0.0.1:%d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s coredns
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
}
`, addr, health, ready, kubeconfig)
}

// waitDNSReady returns once CoreDNS's ready plugin answers 200 (its
// kubernetes plugin has synced with the API server).
func waitDNSReady(deadline time.Time, r *running, port int) error {
	c := &http.Client{Timeout: 2 * time.Second}
	return waitFor(deadline, r, "CoreDNS to be ready", func() error {
		return httpOK(c, fmt.Sprintf("http://127.0.0.1:%d/ready", port))
	})
}

// applyDNSObjects creates (or leaves as they are) what cluster DNS needs in
// the API: kubeadm's RBAC for CoreDNS, and the kube-dns Service with one
// endpoint, addr (selectorless: the endpointslice controller leaves its
// slice alone).
func applyDNSObjects(ctx context.Context, cs kubernetes.Interface, addr string) error {
	dnsPorts := []struct {
		name  string
		proto corev1.Protocol
	}{{"dns", corev1.ProtocolUDP}, {"dns-tcp", corev1.ProtocolTCP}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: dnsService, Namespace: dnsNamespace, Labels: map[string]string{
			"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS",
		}},
		Spec: corev1.ServiceSpec{ClusterIP: cnode.ClusterDNS},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: dnsService + "-devcluster", Namespace: dnsNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: dnsService,
			discoveryv1.LabelManagedBy:   "devcluster",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
	}
	for _, p := range dnsPorts {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.name, Protocol: p.proto, Port: 53, TargetPort: intstr.FromInt32(53)})
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.name), Protocol: ptr.To(p.proto), Port: ptr.To[int32](53)})
	}
	creates := []func() error{
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(dnsNamespace).Create(ctx, &corev1.ServiceAccount{
				ObjectMeta: metav1.ObjectMeta{Name: dnsServiceAccount, Namespace: dnsNamespace},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: dnsClusterRole},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
					{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
				},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: dnsClusterRole},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: dnsClusterRole},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: dnsServiceAccount, Namespace: dnsNamespace}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Services(dnsNamespace).Create(ctx, svc, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.DiscoveryV1().EndpointSlices(dnsNamespace).Create(ctx, slice, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range creates {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster DNS objects: %w", err)
		}
	}
	return nil
}

// CoreDNSMain runs CoreDNS (--bin) with the arguments after --, replacing
// this process, so `down` and `restart coredns` find it by its pid.
func CoreDNSMain(args []string) error {
	fs := flag.NewFlagSet(CoreDNSProc, flag.ContinueOnError)
	bin := fs.String("bin", "", "the CoreDNS program")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" {
		return errors.New("--bin is required")
	}
	return syscall.Exec(*bin, append([]string{*bin}, fs.Args()...), os.Environ())
}
