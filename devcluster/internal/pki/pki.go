// Package pki makes the throwaway certificates and keys a devcluster needs:
// one CA, the API server's serving certificate, an admin client certificate
// (O=system:masters) and the service-account signing key pair.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files names the PEM files Generate writes into a directory.
type Files struct {
	CA, CAKey, ServerCert, ServerKey, AdminCert, AdminKey, SAPub, SAKey string
}

// In returns the file layout under dir.
func In(dir string) Files {
	p := func(n string) string { return filepath.Join(dir, n) }
	return Files{
		CA: p("ca.crt"), CAKey: p("ca.key"),
		ServerCert: p("apiserver.crt"), ServerKey: p("apiserver.key"),
		AdminCert: p("admin.crt"), AdminKey: p("admin.key"),
		SAPub: p("sa.pub"), SAKey: p("sa.key"),
	}
}

type keyPair struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
}

// Generate writes a fresh set of certificates and keys into dir.
func Generate(dir string) (Files, error) {
	f := In(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, err
	}
	ca, err := newCert(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "devcluster-ca"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	})
	if err != nil {
		return f, fmt.Errorf("ca: %w", err)
	}
	server, err := newCert(ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default",
			"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	})
	if err != nil {
		return f, fmt.Errorf("apiserver cert: %w", err)
	}
	admin, err := newCert(ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "devcluster-admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return f, fmt.Errorf("admin cert: %w", err)
	}
	for _, w := range []struct {
		kp        *keyPair
		cert, key string
	}{{ca, f.CA, f.CAKey}, {server, f.ServerCert, f.ServerKey}, {admin, f.AdminCert, f.AdminKey}} {
		if err := writeKeyPair(w.kp, w.cert, w.key); err != nil {
			return f, err
		}
	}
	// Service-account tokens are signed with RSA, which every client verifies.
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return f, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return f, err
	}
	if err := writePEM(f.SAPub, "PUBLIC KEY", pub); err != nil {
		return f, err
	}
	return f, writePEM(f.SAKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa))
}

func newCert(parent *keyPair, tmpl *x509.Certificate) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(10 * 365 * 24 * time.Hour)
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, der: der, key: key}, nil
}

func writeKeyPair(kp *keyPair, certPath, keyPath string) error {
	if err := writePEM(certPath, "CERTIFICATE", kp.der); err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(kp.key)
	if err != nil {
		return err
	}
	return writePEM(keyPath, "EC PRIVATE KEY", der)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
