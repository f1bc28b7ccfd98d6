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
	"math/big"
	"net"
	"net/http"
	"strconv"
	"time"

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
