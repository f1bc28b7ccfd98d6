package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// tokenTTL is what we ask for; like a kubelet we refresh at 80% of the
// lifetime the API server actually granted.
const tokenTTL = 3600

// wantsToken applies the ServiceAccount admission rules: the pod's
// automountServiceAccountToken wins, else the ServiceAccount's, else yes.
func wantsToken(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) (bool, error) {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken, nil
	}
	sa, err := client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, serviceAccountName(pod), metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("get service account %q: %w", serviceAccountName(pod), err)
	}
	return sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken, nil
}

func serviceAccountName(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return pod.Spec.ServiceAccountName
	}
	return "default"
}

// saCreds keeps a pod's bound service-account token fresh on disk, with
// the usual token/ca.crt/namespace files and a kubeconfig that reads the
// token file (client-go and kube-rs both re-read tokenFile), so the program
// acts with exactly its service account's rights.
type saCreds struct {
	client    kubernetes.Interface
	pod       *corev1.Pod
	dir       string // holds token, ca.crt, namespace
	server    string
	caData    []byte
	refreshAt time.Time
}

func (s *saCreds) tokenPath() string      { return filepath.Join(s.dir, "token") }
func (s *saCreds) kubeconfigPath() string { return filepath.Join(s.dir, "kubeconfig") }

// fetch requests a token bound to the pod, so it dies with the pod and
// carries the pod's name and UID for admission policies.
func (s *saCreds) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	ttl := int64(tokenTTL)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &ttl,
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: s.pod.Name, UID: s.pod.UID,
		},
	}}
	sa := serviceAccountName(s.pod)
	tr, err := s.client.CoreV1().ServiceAccounts(s.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request token for service account %q: %w", sa, err)
	}
	now := time.Now()
	life := tr.Status.ExpirationTimestamp.Sub(now)
	if life <= 0 {
		life = tokenTTL * time.Second
	}
	s.refreshAt = now.Add(life * 8 / 10)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if err := writeAtomic(s.tokenPath(), []byte(tr.Status.Token), 0o600); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(s.dir, "ca.crt"), s.caData, 0o644); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(s.dir, "namespace"), []byte(s.pod.Namespace), 0o644); err != nil {
		return err
	}
	return s.writeKubeconfig(sa)
}

func (s *saCreds) writeKubeconfig(sa string) error {
	user := "system:serviceaccount:" + s.pod.Namespace + ":" + sa
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["devcluster"] = &clientcmdapi.Cluster{
		Server:               s.server,
		CertificateAuthority: filepath.Join(s.dir, "ca.crt"),
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{TokenFile: s.tokenPath()}
	cfg.Contexts["devcluster"] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: user, Namespace: s.pod.Namespace}
	cfg.CurrentContext = "devcluster"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeAtomic(s.kubeconfigPath(), b, 0o600)
}

// refreshLoop renews the token until ctx ends; failures retry soon, while
// the old token is still valid.
func (s *saCreds) refreshLoop(ctx context.Context) {
	for {
		wait := time.Until(s.refreshAt)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if err := s.fetch(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			logf("pod %s/%s: token refresh failed, retrying: %v", s.pod.Namespace, s.pod.Name, err)
			s.refreshAt = time.Now().Add(10 * time.Second)
		}
	}
}

// writeAtomic replaces path in one rename, so readers never see a torn file.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
