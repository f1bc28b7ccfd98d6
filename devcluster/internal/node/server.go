package node

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
)

// listenKubelet opens the kubelet HTTPS port all nodes share (pod names
// are unique per namespace, so one server can serve every node's logs).
// The certificate is self-signed and in memory: the API server does not
// verify kubelet certificates unless told to.
func listenKubelet(addr string, port int, names []string) (net.Listener, error) {
	ip := net.ParseIP(addr)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--listen-address %q: only a loopback IP is allowed", addr)
	}
	cert, err := selfSignedCert(ip, names)
	if err != nil {
		return nil, err
	}
	return tls.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)), &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	})
}

func selfSignedCert(ip net.IP, names []string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "devcluster-node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{ip},
		DNSNames:     append([]string{"localhost"}, names...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// kubeletHandler serves VK's kubelet routes; only logs and the pod list
// are implemented (exec, attach and port-forward answer 501).
func (a *agent) kubeletHandler() http.Handler {
	mux := http.NewServeMux()
	api.AttachPodRoutes(api.PodHandlerConfig{
		GetContainerLogs: a.containerLogs,
		GetPods: func(ctx context.Context) ([]*corev1.Pod, error) {
			var all []*corev1.Pod
			for _, p := range a.providers {
				pods, _ := p.GetPods(ctx)
				all = append(all, pods...)
			}
			return all, nil
		},
		GetPodsFromKubernetes: func(context.Context) ([]*corev1.Pod, error) {
			var all []*corev1.Pod
			for _, p := range a.providers {
				pods, err := p.lister.List(everything)
				if err != nil {
					return nil, err
				}
				all = append(all, pods...)
			}
			return all, nil
		},
	}, mux, false)
	return mux
}

// containerLogs implements VK's GetContainerLogs: tailLines, limitBytes,
// previous and follow are honoured; timestamps and since* are not.
func (a *agent) containerLogs(ctx context.Context, namespace, pod, container string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	req, err := a.findLog(namespace, pod, container, opts.Previous)
	if err != nil {
		return nil, err
	}
	req.tail, req.limit, req.follow = opts.Tail, opts.LimitBytes, opts.Follow
	rc, err := openLogStream(ctx, req)
	if os.IsNotExist(err) {
		return nil, errdefs.NotFoundf("no log for container %q in pod %s/%s", container, namespace, pod)
	}
	return rc, err
}

func (a *agent) findLog(namespace, pod, container string, previous bool) (logRequest, error) {
	for _, p := range a.providers {
		if r := p.get(namespace + "/" + pod); r != nil {
			return r.logRequest(container, previous)
		}
	}
	return a.findLogOnDisk(namespace, pod, container, previous)
}

func (r *podRun) logRequest(container string, previous bool) (logRequest, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.all() {
		if c.spec.Name != container {
			continue
		}
		inst, exited := c.instance, c.exited
		if inst < 0 && c.hadInstance {
			inst, exited = c.status.RestartCount, nil // ran under a previous agent
		}
		if inst < 0 {
			// The kubelet's wording, which kubectl users know.
			msg := fmt.Sprintf("container %q in pod %q is waiting to start", container, r.pod.Name)
			if w := c.status.State.Waiting; w != nil && w.Reason != "" {
				msg += ": " + w.Reason
			}
			return logRequest{}, errdefs.InvalidInput(msg)
		}
		if previous {
			if inst == 0 {
				return logRequest{}, errdefs.InvalidInputf("previous terminated container %q in pod %s not found", container, r.key)
			}
			inst, exited = inst-1, nil
		}
		if exited == nil {
			exited = closedChan
		}
		return logRequest{path: logPath(r.dir, container, inst), finished: exited}, nil
	}
	return logRequest{}, errdefs.NotFoundf("container %q is not valid for pod %s", container, r.key)
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// findLogOnDisk serves pods this agent no longer (or never) ran, such as
// finished pods from before a restart: newest pod directory, highest
// instance.
func (a *agent) findLogOnDisk(namespace, pod, container string, previous bool) (logRequest, error) {
	dirs, _ := filepath.Glob(filepath.Join(a.stateDir, "pods", namespace+"_"+pod+"_*"))
	var newest string
	var newestTime time.Time
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.ModTime().After(newestTime) {
			newest, newestTime = d, st.ModTime()
		}
	}
	if newest == "" {
		return logRequest{}, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, pod)
	}
	files, _ := filepath.Glob(filepath.Join(newest, "logs", container, "*.log"))
	var insts []int
	for _, f := range files {
		if n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".log")); err == nil {
			insts = append(insts, n)
		}
	}
	sort.Ints(insts)
	i := len(insts) - 1
	if previous {
		i--
	}
	if i < 0 {
		return logRequest{}, errdefs.NotFoundf("no log for container %q in pod %s/%s", container, namespace, pod)
	}
	return logRequest{path: logPath(newest, container, int32(insts[i])), finished: closedChan}, nil
}
