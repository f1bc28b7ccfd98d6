package cluster

import (
	"encoding/base64"
	"fmt"
	"os"

	"longtask.dev/devcluster/internal/pki"
)

func writeKubeconfig(path, server string, f pki.Files) error {
	return writeKubeconfigFiles(path, server, f.CA, f.AdminCert, f.AdminKey)
}

// writeKubeconfigFiles writes a kubeconfig for the client certificate in
// certFile and keyFile.
func writeKubeconfigFiles(path, server, caFile, certFile, keyFile string) error {
	read := func(p string) (string, error) {
		b, err := os.ReadFile(p)
		return base64.StdEncoding.EncodeToString(b), err
	}
	ca, err := read(caFile)
	if err != nil {
		return err
	}
	cert, err := read(certFile)
	if err != nil {
		return err
	}
	key, err := read(keyFile)
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: devcluster
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: devcluster
  context:
    cluster: devcluster
    user: admin
    namespace: default
current-context: devcluster
`, server, ca, cert, key)
	return os.WriteFile(path, []byte(cfg), 0o600)
}
