package cluster

import (
	"encoding/base64"
	"fmt"
	"os"

	"longtask.dev/devcluster/internal/pki"
)

func writeKubeconfig(path, server string, f pki.Files) error {
	read := func(p string) (string, error) {
		b, err := os.ReadFile(p)
		return base64.StdEncoding.EncodeToString(b), err
	}
	ca, err := read(f.CA)
	if err != nil {
		return err
	}
	cert, err := read(f.AdminCert)
	if err != nil {
		return err
	}
	key, err := read(f.AdminKey)
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
