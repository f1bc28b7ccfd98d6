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

// Generate writes a fresh set of certificates and keys into dir; the API
// server's certificate also names serverIPs (beside loopback and the
// kubernetes Service's address).
func Generate(dir string, serverIPs ...net.IP) (Files, error) {
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
		IPAddresses: append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}, serverIPs...),
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

// Cert is one certificate Issue signs with the CA.
type Cert struct {
	Name          string   // file stem: NAME.crt, NAME.key
	CommonName    string   // the user (client) or host (server) it names
	Organizations []string // the client's groups
	IPs           []net.IP // a serving certificate's addresses
	Server        bool     // serving, not client, certificate
}

// Issue signs c with the CA of dir (written by Generate) and writes
// dir/NAME.crt and dir/NAME.key, returning their paths.
func Issue(dir string, c Cert) (certPath, keyPath string, err error) {
	f := In(dir)
	ca, err := loadKeyPair(f.CA, f.CAKey)
	if err != nil {
		return "", "", fmt.Errorf("load CA: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: c.CommonName, Organization: c.Organizations},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IPAddresses: c.IPs,
	}
	if c.Server {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	kp, err := newCert(ca, tmpl)
	if err != nil {
		return "", "", fmt.Errorf("%s cert: %w", c.Name, err)
	}
	certPath, keyPath = filepath.Join(dir, c.Name+".crt"), filepath.Join(dir, c.Name+".key")
	return certPath, keyPath, writeKeyPair(kp, certPath, keyPath)
}

func loadKeyPair(certPath, keyPath string) (*keyPair, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("%s or %s holds no PEM block", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, der: cb.Bytes, key: key}, nil
}
